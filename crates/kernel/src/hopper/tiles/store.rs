//! The whole-tile kernel's epilogue store: a warpgroup's 64 rows of the tile, finished from its
//! registers ([`crate::epilogue`]), written into 128-byte-swizzled shared-memory chunks and
//! stored by the TMA engine, and under the mask's epilogue the ReLU mask's words.

use super::config::KernelConfig;
use crate::epilogue::{mask_bit, or_across_lanes, relu};
use crate::hopper::mbarrier::fence_proxy_async;
use crate::hopper::ptx::warpgroup_barrier;
use crate::hopper::tma::{store_3d, wait_stores_read_but_one};
use crate::hopper::wgmma::{Operand, store_matrix_x4};
use cubecl::prelude::*;

/// Adds the bias to the unit's accumulator elements and applies the ReLU (under
/// [`Epilogue::BiasRelu`](crate::epilogue::Epilogue); a plain product stores the sums as they are),
/// and stores the warpgroup's 64 rows of the tile through shared memory in chunks of 64 rows and
/// one swizzle line (64 half-precision or 32 f32 columns): the warpgroup writes a chunk into a
/// 128-byte-swizzled buffer (the layout the output's tensor map reads), with `stmatrix` for half
/// precisions and one store per element for f32, then one unit has the TMA engine store it, which
/// also clips the rows and columns past the output's edges. Two buffers per warpgroup alternate, so
/// a chunk is written while the one before it is stored.
///
/// Unit `u` of a warpgroup holds, for `nth` in `0..N / 2`, row `16 (u / 32) + (u % 32) / 4 +
/// 8 ((nth / 2) % 2)` and column `8 (nth / 4) + 2 (u % 4) + nth % 2` of its 64 x N tile:
/// per 8 x 8 block of the tile, one register pair per unit, which is `stmatrix`'s fragment.
#[cube]
#[allow(clippy::too_many_arguments)]
// A compile-time branch (`comptime!`) holds a run-time one; merged, both would be run-time.
#[allow(clippy::collapsible_if)]
pub(crate) fn store_tile<E: Float, R: Size>(
    acc: Vector<f32, R>,
    bias: &Tensor<E>,
    bias_offset: usize,
    smem_bias: &[E],
    output: &mut TensorMap<E, Tiled>,
    smem_c: &mut [E],
    smem_c_address: u32,
    mask: &mut Tensor<u32>,
    batch: usize,
    row0: usize,
    col0: usize,
    m: usize,
    n: usize,
    warpgroup: u32,
    #[comptime] config: KernelConfig,
) {
    let rank = bias.rank();
    let (bias_sm, bias_sn) = (bias.stride(rank - 2), bias.stride(rank - 1));

    let unit = (UNIT_POS % 128) as usize;
    let lane = unit % 32;
    let local_row = (unit / 32) * 16 + lane / 4;
    let local_col = 2 * (lane % 4);
    let row_base = row0 + warpgroup as usize * 64;
    // `stmatrix .x4` writes four 8 x 8 blocks; lanes `8 j..8 j + 7` address the rows of block
    // `j`, which is block row `j % 2` (8 rows apart) of column group `j / 2`.
    let block = lane / 8;
    let address_row = (unit / 32) * 16 + (block % 2) * 8 + lane % 8;
    let (chunk_cols, out_chunk) = comptime![(config.tile_k(), config.out_chunk())];
    #[unroll]
    for chunk in 0..comptime![config.tile.n / chunk_cols] {
        let buffer = (warpgroup as usize * 2 + comptime![chunk % 2]) * out_chunk;
        // The store issued from this buffer two chunks ago must have read it.
        if unit == 0 {
            wait_stores_read_but_one();
        }
        warpgroup_barrier(warpgroup);
        // Under `BiasReluMask`, the unit's mask bits of the chunk: word `2 h + w` holds row
        // `local_row + 8 h`, columns `32 w..32 w + 31` of the chunk.
        let mut words = Array::<u32>::new(4usize);
        #[unroll]
        for word in 0..4usize {
            words[word] = 0u32;
        }
        #[unroll]
        for pair in 0..comptime![chunk_cols / 16] {
            // Eight values: column groups `2 pair` and `2 pair + 1`, rows `h = 0, 1`, two
            // adjacent columns each, in `stmatrix`'s block order.
            let mut values = Vector::<f32, Const<8>>::empty();
            #[unroll]
            for j in 0..4usize {
                let jj = comptime![2 * pair + j / 2];
                let h = comptime![j % 2];
                #[unroll]
                for e in 0..2usize {
                    let chunk_col = local_col + comptime![8 * jj + e];
                    let col = col0 + comptime![chunk * chunk_cols] + chunk_col;
                    let nth = comptime![4 * (chunk * chunk_cols / 8 + jj) + 2 * h + e];
                    let mut value = acc.extract(nth);
                    if comptime![config.epilogue.bias_relu()] {
                        if comptime![config.bias_row_broadcast] {
                            let at = warpgroup as usize * comptime![config.tile.n]
                                + comptime![chunk * chunk_cols]
                                + chunk_col;
                            value += f32::cast_from(smem_bias[at]);
                        } else {
                            let row = row_base + local_row + comptime![8 * h];
                            if row < m && col < n {
                                value += f32::cast_from(
                                    bias[bias_offset + row * bias_sm + col * bias_sn],
                                );
                            }
                        }
                        value = relu(value);
                    }
                    if comptime![config.epilogue.writes_mask()] {
                        // The bit follows the stored value, as the backward reads it.
                        let keep = mask_bit::<E>(E::cast_from(value));
                        let bit = local_col as u32 + comptime![(8 * (jj % 4) + e) as u32];
                        words[comptime![2 * h + jj / 4]] |= keep << bit;
                    }
                    if comptime![config.operand.half()] {
                        values.insert(comptime![2 * j + e], value);
                    } else {
                        // f32: the unit writes its element itself. 128-byte swizzle: the
                        // 16-byte group (four elements) of a line moves by the line's index
                        // modulo 8, which is `local_row % 8` for both `h`.
                        let line = local_row + comptime![8 * h];
                        let group = (chunk_col / 4) ^ (local_row % 8);
                        smem_c[buffer + line * chunk_cols + group * 4 + chunk_col % 4] =
                            E::cast_from(value);
                    }
                }
            }
            if comptime![config.operand.half()] {
                // 128-byte swizzle: the 16-byte group of a line moves by the line's index
                // modulo 8.
                let group = (comptime![2 * pair] + block / 2) ^ (address_row % 8);
                let address =
                    smem_c_address + ((buffer + address_row * chunk_cols + group * 8) * 2) as u32;
                store_matrix_x4(address, values, comptime![config.operand == Operand::Bf16]);
            }
        }
        if comptime![config.epilogue.writes_mask()] {
            store_mask_words(
                &words,
                mask,
                batch,
                row_base + local_row,
                (col0 + comptime![chunk * chunk_cols]) / 32,
                m,
                lane,
                comptime![chunk_cols / 32],
            );
        }
        // The TMA engine reads shared memory through the async proxy.
        fence_proxy_async();
        warpgroup_barrier(warpgroup);
        if unit == 0 {
            store_3d::<E>(
                output,
                smem_c_address + (buffer * comptime![config.operand.bytes()]) as u32,
                batch as i32,
                row_base as i32,
                (col0 + comptime![chunk * chunk_cols]) as i32,
            );
        }
    }
}

/// Stores a chunk's mask words (`words`, as [`store_tile`] fills them). The four units of a
/// quad (`lane % 4`) hold disjoint bits of the same words, so they OR them together, and unit
/// `q` of the quad stores word `q`: row `row + 8 (q / 2)`, word `first_word + q % 2` of the
/// row, when both are inside the mask and the word is one of the chunk's `chunk_words` (two
/// for a 64-column chunk of half-precision elements, one for a 32-column f32 chunk).
#[cube]
#[allow(clippy::too_many_arguments)]
fn store_mask_words(
    words: &Array<u32>,
    mask: &mut Tensor<u32>,
    batch: usize,
    row: usize,
    first_word: usize,
    m: usize,
    lane: usize,
    #[comptime] chunk_words: usize,
) {
    let row_words = mask.shape(mask.rank() - 1);
    let quad = lane % 4;
    let mut mine = 0u32;
    #[unroll]
    for word in 0..4usize {
        let value = or_across_lanes(words[word], 0u32, 2u32);
        mine = select(quad == word, value, mine);
    }
    let row = row + 8 * (quad / 2);
    let word = first_word + quad % 2;
    if row < m && word < row_words && quad % 2 < chunk_words {
        mask[(batch * m + row) * row_words + word] = mine;
    }
}
