//! The host side of the Hopper kernel's contract: whether a problem's layout is one the TMA
//! engine can read, and how each operand is addressed (which dim is contiguous, how the batch
//! folds into one TMA coordinate). Plain Rust, no device: unit-tested on any machine.

use cubecl::prelude::TensorBinding;

/// Bytes of one 128-byte swizzle line: a stage's depth along `k` in a K-major operand, and the
/// width of one TMA box of an MN-major one.
pub(crate) const LINE_BYTES: usize = 128;

/// Elements of `elem_size` bytes in one swizzle line: a stage's depth along `k` (64
/// half-precision elements, 32 f32 ones), and the width along `m` or `n` of one TMA box of an
/// MN-major operand (a panel).
pub(crate) const fn line_elems(elem_size: usize) -> usize {
    LINE_BYTES / elem_size
}
/// Shared memory the ring's stages may take: the rest of the 227 KiB a cube may use holds the
/// epilogue's buffers and the barriers.
const RING_BYTES: usize = 192 * 1024;
/// Most stages in the ring. Measured on an H200 at `1 x 128 x 4096 x 4096` (64 x 64 tiles), 12
/// stages ran 30% slower than 8.
const MAX_STAGES: usize = 8;

/// The output tile one cube computes at a time, and the depth of its ring. Rows come in
/// warpgroups of 64 (one consumer warpgroup each), columns are one `m64nN` MMA's `N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TileShape {
    /// Rows: 64 or 128.
    pub m: usize,
    /// Columns: 64, 128 or 256.
    pub n: usize,
    /// Rows of `lhs` one stage holds: `m`, or (split-K with few rows, `lhs` K-major) 8, 16 or
    /// 32, whole 8-row groups of the 128-byte swizzle. The MMAs still read `m` rows; the
    /// others come from whatever follows in the ring, and their sums are never stored.
    pub lhs_rows: usize,
    /// Stages in the shared-memory ring.
    pub stages: usize,
}

impl TileShape {
    /// Largest first: the first of these that gives every multiprocessor a tile is chosen.
    /// Larger tiles read fewer bytes per FLOP; smaller ones spread a small problem (a `Linear`
    /// at inference batch sizes, bound by reading the weight) over more multiprocessors.
    const CANDIDATES: [(usize, usize); 4] = [(128, 256), (128, 128), (64, 128), (64, 64)];

    fn new(m: usize, n: usize) -> Self {
        let stage_bytes = (m + n) * LINE_BYTES;
        Self {
            m,
            n,
            lhs_rows: m,
            stages: (RING_BYTES / stage_bytes).min(MAX_STAGES),
        }
    }

    /// The tile for a problem of `tiles(shape)` output tiles on `processors` multiprocessors:
    /// the largest that still keeps three quarters of them busy, else the smallest.
    pub fn choose(processors: usize, tiles: impl Fn(usize, usize) -> usize) -> Self {
        let (m, n) = Self::CANDIDATES
            .into_iter()
            .find(|&(m, n)| 4 * tiles(m, n) >= 3 * processors)
            .unwrap_or(Self::CANDIDATES[Self::CANDIDATES.len() - 1]);
        Self::new(m, n)
    }

    /// Every tile [`choose`](Self::choose) can return.
    #[cfg(test)]
    pub fn all() -> impl Iterator<Item = Self> {
        Self::CANDIDATES.into_iter().map(|(m, n)| Self::new(m, n))
    }

    /// Consumer warpgroups: one per 64 rows.
    pub const fn consumers(self) -> usize {
        self.m / 64
    }

    /// Bytes one stage brings in: one swizzle line per row of `lhs` it holds and per column.
    pub const fn stage_bytes(self) -> usize {
        (self.lhs_rows + self.n) * LINE_BYTES
    }

    /// Bytes after the ring's last `lhs` stage that its MMAs read when a stage holds fewer
    /// rows of `lhs` than the tile has: the rows past the stage's own.
    pub const fn lhs_tail_bytes(self) -> usize {
        (self.m - self.lhs_rows) * LINE_BYTES
    }
}

/// How a problem's work is cut: the output tile, and how many slices of `k` each tile's sum is
/// cut into. With more than one slice (split-K), each cube sums one slice of one tile, and the
/// slices of a tile, one cluster of cubes, add up in the first cube's shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Schedule {
    pub tile: TileShape,
    /// Slices of `k` per output tile; 1 when the tiles alone keep the device busy.
    pub splits: usize,
}

impl Schedule {
    /// A split-K tile: the smallest, the most tiles before `k` is split. Its f32 sums (16 KiB)
    /// are what each cube of a cluster hands to the first.
    const SPLIT_TILE: (usize, usize) = (64, 64);
    /// Stages of a split-K cube's ring: two such cubes (5 x 16 KiB of stages and 16 KiB of
    /// output buffers each) share a multiprocessor, so that one's first fill from memory
    /// overlaps the other's stream. Measured on an H200 at `1 x 1 x 4096 x 4096`: 16 us for the
    /// first kernel, against 18.5 with one cube of 8 stages per multiprocessor.
    const SPLIT_STAGES: usize = 5;
    /// Fewest k-blocks (one swizzle line deep) in one slice: a shallower slice's ring barely
    /// fills before its partial sums are written out.
    const MIN_SLICE_BLOCKS: usize = 8;
    /// Most slices per tile: a cluster's first cube receives the other cubes' sums in its two
    /// rings, which hold four tiles of f32 sums in every split-K cube (a test checks each).
    pub(crate) const MAX_SPLITS: usize = 5;
    /// Rows of `lhs` a split-K stage holds when the problem has no more (and `lhs` is
    /// K-major): at batch 1 a 64-row block is 63 rows of zeros, half of every stage's bytes.
    const SHORT_LHS_ROWS: [usize; 3] = [8, 16, 32];
    /// The ring of a split-K cube whose stages hold few `lhs` rows, tail included: two such
    /// cubes share a multiprocessor's 228 KiB, each with 1 KiB reserved, two 64 x 64 output
    /// buffers of one line per row, the staged bias (f32 at most) and its barriers (256 bytes).
    const SHORT_LHS_RING_BYTES: usize = 113 * 1024 - 2 * 64 * LINE_BYTES - 64 * 4 - 256;

    /// The schedule of a `batch x m x n` output over `k` (elements of `elem_size` bytes) on
    /// `processors` multiprocessors.
    ///
    /// A problem with few output rows (a `Linear` at inference batch sizes) is bound by
    /// streaming `rhs`, and with one tile per cube each cube walks all of `k` in sequence: too
    /// few cubes, each with too long a chain. When the smallest tiles are no more than the
    /// multiprocessors, the `k` of each tile is split across up to two cubes per
    /// multiprocessor instead. Otherwise the tiles alone spread the work
    /// ([`TileShape::choose`]). With at most 32 rows and `lhs` K-major (`lhs_k_major`), a
    /// split-K stage holds only the rows there are, so that the ring holds more of the weight
    /// ([`short_lhs_split_tile`](Self::short_lhs_split_tile)).
    pub fn choose(
        processors: usize,
        batch: usize,
        m: usize,
        n: usize,
        k: usize,
        elem_size: usize,
        lhs_k_major: bool,
    ) -> Self {
        let (tile_m, tile_n) = Self::SPLIT_TILE;
        let tiles = batch * m.div_ceil(tile_m) * n.div_ceil(tile_n);
        let splits = (2 * processors / tiles.max(1))
            .min(k.div_ceil(line_elems(elem_size)) / Self::MIN_SLICE_BLOCKS)
            .min(Self::MAX_SPLITS);
        if splits >= 2 {
            let short_rows = Self::SHORT_LHS_ROWS.into_iter().find(|&rows| m <= rows);
            let tile = match short_rows {
                Some(rows) if lhs_k_major => Self::short_lhs_split_tile(rows),
                _ => Self::split_tile(),
            };
            return Self { tile, splits };
        }
        let tile = TileShape::choose(processors, |tile_m, tile_n| {
            m.div_ceil(tile_m) * n.div_ceil(tile_n) * batch
        });
        Self { tile, splits: 1 }
    }

    /// The tile and ring of a split-K cube.
    pub fn split_tile() -> TileShape {
        let (m, n) = Self::SPLIT_TILE;
        TileShape {
            m,
            n,
            lhs_rows: m,
            stages: Self::SPLIT_STAGES,
        }
    }

    /// The tile and ring of a split-K cube whose stages hold `rows` rows of `lhs` (one of
    /// [`SHORT_LHS_ROWS`](Self::SHORT_LHS_ROWS)): as many stages as
    /// [`SHORT_LHS_RING_BYTES`](Self::SHORT_LHS_RING_BYTES) holds beside the tail its last
    /// stage's MMAs read.
    pub fn short_lhs_split_tile(rows: usize) -> TileShape {
        let (m, n) = Self::SPLIT_TILE;
        let mut tile = TileShape {
            m,
            n,
            lhs_rows: rows,
            stages: 0,
        };
        tile.stages = (Self::SHORT_LHS_RING_BYTES - tile.lhs_tail_bytes()) / tile.stage_bytes();
        tile
    }

    /// Every tile and ring a split-K cube can run.
    #[cfg(test)]
    pub fn split_tiles() -> impl Iterator<Item = TileShape> {
        std::iter::once(Self::split_tile()).chain(
            Self::SHORT_LHS_ROWS
                .into_iter()
                .map(Self::short_lhs_split_tile),
        )
    }
}

/// Which dim of `lhs` is contiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LhsMajor {
    /// `lhs[.., m, k]` with stride 1 along `k`: activations, row-major.
    K,
    /// `lhs[.., m, k]` with stride 1 along `m`: a transposed view, as in `lhsᵀ @ grad`.
    M,
}

/// Which dim of `rhs` is contiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum RhsMajor {
    /// `rhs[.., k, n]` with stride 1 along `n`: Burn's `Linear` weight `[d_in, d_out]`.
    N,
    /// `rhs[.., k, n]` with stride 1 along `k`: a `[d_out, d_in]` weight transposed by strides.
    K,
}

/// How one of `lhs`/`rhs` is read through a rank-3 tensor map `[batch, rows, cols]`, `cols`
/// contiguous. Strides in elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapLayout {
    /// `[batch, rows, cols]`; `batch` is 1 for an operand broadcast over every batch dim.
    pub shape: [usize; 3],
    /// `[batch, rows, 1]`.
    pub strides: [usize; 3],
    /// Whether the output's flattened batch index is this map's batch coordinate (else 0).
    pub batched: bool,
}

/// How the Hopper kernel reads a problem, or why it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// `lhs` as `[batch, m, k]` (K-major) or `[batch, k, m]` (M-major).
    pub lhs: MapLayout,
    /// Which dim of `lhs` is contiguous.
    pub lhs_major: LhsMajor,
    /// `rhs` as `[batch, k, n]` (N-major) or `[batch, n, k]` (K-major).
    pub rhs: MapLayout,
    /// Which dim of `rhs` is contiguous.
    pub rhs_major: RhsMajor,
    /// The output as `[batch, m, n]`, written through a tensor map too.
    pub out: MapLayout,
}

/// Builds the [`Plan`] of a problem that passed the launch contract, or says in words why TMA
/// cannot read it (another variant then runs it).
pub(crate) fn plan(
    lhs: &TensorBinding,
    rhs: &TensorBinding,
    out: &TensorBinding,
    elem_size: usize,
) -> Result<Plan, String> {
    let out_shape: &[usize] = &out.shape;
    let rank = out_shape.len();
    let (m, n) = (out_shape[rank - 2], out_shape[rank - 1]);
    let k = lhs.shape[rank - 1];
    let batch_shape = &out_shape[..rank - 2];
    for (name, binding) in [("lhs", lhs), ("rhs", rhs), ("out", out)] {
        let offset = binding.handle.offset_start.unwrap_or(0);
        if !offset.is_multiple_of(16) {
            return Err(format!(
                "`{name}` starts {offset} bytes into its buffer, not 16-aligned"
            ));
        }
    }

    let (lhs_k_major, lhs_map) = operand_map("lhs", lhs, batch_shape, [m, k], elem_size)?;
    let lhs_major = if lhs_k_major {
        LhsMajor::K
    } else {
        LhsMajor::M
    };
    let (rhs_n_major, rhs_map) = operand_map("rhs", rhs, batch_shape, [k, n], elem_size)?;
    let rhs_major = if rhs_n_major {
        RhsMajor::N
    } else {
        RhsMajor::K
    };
    // The contract makes the output contiguous: its batch dims fold into one.
    let out_map = map_layout("out", out, batch_shape, [m, n], n, elem_size)?;
    Ok(Plan {
        lhs: lhs_map,
        lhs_major,
        rhs: rhs_map,
        rhs_major,
        out: out_map,
    })
}

/// The map of an operand `[.., rows, cols]`: read as it is when `cols` is contiguous (`true`),
/// else through its transpose when `rows` is (`false`); an error when neither is.
fn operand_map(
    name: &str,
    binding: &TensorBinding,
    batch_shape: &[usize],
    [rows, cols]: [usize; 2],
    elem_size: usize,
) -> Result<(bool, MapLayout), String> {
    let rank = binding.strides.len();
    let strides = &binding.strides[rank - 2..];
    if strides[1] == 1 || cols == 1 {
        let map = map_layout(
            name,
            binding,
            batch_shape,
            [rows, cols],
            strides[0],
            elem_size,
        )?;
        Ok((true, map))
    } else if strides[0] == 1 || rows == 1 {
        let map = map_layout(
            name,
            binding,
            batch_shape,
            [cols, rows],
            strides[1],
            elem_size,
        )?;
        Ok((false, map))
    } else {
        Err(format!(
            "`{name}` has no contiguous dim among its last two (strides {:?})",
            binding.strides
        ))
    }
}

/// The rank-3 map of one operand whose last two dims, in memory order, are `[rows, cols]` with
/// `cols` contiguous and `rows` at `row_stride`.
fn map_layout(
    name: &str,
    binding: &TensorBinding,
    batch_shape: &[usize],
    [rows, cols]: [usize; 2],
    row_stride: usize,
    elem_size: usize,
) -> Result<MapLayout, String> {
    // TMA: every stride but the innermost a multiple of 16 bytes, under 2^40.
    let row_stride = if rows <= 1 { cols } else { row_stride };
    let aligned =
        |stride: usize| (stride * elem_size).is_multiple_of(16) && stride * elem_size < 1 << 40;
    if !aligned(row_stride) {
        return Err(format!(
            "`{name}`'s row stride of {row_stride} elements is not a multiple of 16 bytes"
        ));
    }
    let batch_stride =
        fold_batch(&binding.strides[..batch_shape.len()], batch_shape).ok_or_else(|| {
            format!(
                "`{name}`'s batch strides {:?} over batch dims {batch_shape:?} are neither all \
                 broadcast nor one evenly strided run",
                &binding.strides[..batch_shape.len()]
            )
        })?;
    let (batched, shape_b, stride_b) = match batch_stride {
        // Broadcast over every batch dim (or no batch): one batch, coordinate 0. Its stride is
        // never followed; any aligned value will do.
        None => (false, 1, (rows * row_stride).max(row_stride).max(1)),
        Some(stride) => (true, batch_shape.iter().product(), stride),
    };
    if !aligned(stride_b) {
        return Err(format!(
            "`{name}`'s batch stride of {stride_b} elements is not a multiple of 16 bytes"
        ));
    }
    Ok(MapLayout {
        shape: [shape_b, rows, cols],
        strides: [stride_b, row_stride, 1],
        batched,
    })
}

/// The one stride that takes the flattened batch index (last dim fastest) to an operand's
/// batch offset: `Some(None)` when the operand is broadcast over every batch dim of more than
/// one element, `Some(Some(s))` when `offset = index * s`, `None` when neither holds (a mix of
/// broadcast and strided dims, or dims that do not nest).
fn fold_batch(strides: &[usize], shape: &[usize]) -> Option<Option<usize>> {
    let dims: Vec<(usize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(size, _)| **size > 1)
        .map(|(size, stride)| (*size, *stride))
        .collect();
    if dims.iter().all(|(_, stride)| *stride == 0) {
        return Some(None);
    }
    let (_, innermost) = *dims.last()?;
    if innermost == 0 {
        return None;
    }
    let mut expected = innermost;
    for (size, stride) in dims.iter().rev() {
        if *stride != expected {
            return None;
        }
        expected = stride * size;
    }
    Some(Some(innermost))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiles_of(batch: usize, m: usize, n: usize) -> impl Fn(usize, usize) -> usize {
        move |tm, tn| batch * m.div_ceil(tm) * n.div_ceil(tn)
    }

    #[test]
    fn large_problems_take_the_largest_tile_and_small_m_spreads_out() {
        let large = TileShape::choose(132, tiles_of(1, 4096, 4096));
        assert_eq!((large.m, large.n, large.stages), (128, 256, 4));
        // A `Linear` at batch 128: 16 tiles of 128 x 256, 128 of 64 x 64.
        let small = TileShape::choose(132, tiles_of(1, 128, 4096));
        assert_eq!((small.m, small.n, small.stages), (64, 64, 8));
        // 128 tiles of 128 x 256 keep 128 of 132 busy: large enough.
        let wave = TileShape::choose(132, tiles_of(1, 2048, 2048));
        assert_eq!((wave.m, wave.n), (128, 256));
        let mid = TileShape::choose(132, tiles_of(1, 1024, 2048));
        assert_eq!((mid.m, mid.n, mid.stages), (128, 128, 6));
        // Never fewer than the smallest tile's count: m = 1 still takes 64 x 64.
        assert_eq!(TileShape::choose(132, tiles_of(1, 1, 4096)).n, 64);
    }

    #[test]
    fn weight_streaming_problems_split_k_and_others_do_not() {
        let schedule = |b, m, n, k| {
            let s = Schedule::choose(132, b, m, n, k, 2, true);
            (s.tile.m, s.tile.n, s.splits)
        };
        // A `Linear` at inference batch sizes: 64 tiles of 64 columns, four slices of 1024,
        // two cubes per multiprocessor.
        assert_eq!(schedule(1, 1, 4096, 4096), (64, 64, 4));
        assert_eq!(schedule(1, 16, 4096, 4096), (64, 64, 4));
        assert_eq!(schedule(2, 120, 200, 1000), (64, 64, 2));
        // A narrow output: 16 tiles, five slices (as many as the first cube can receive).
        assert_eq!(schedule(1, 1, 1024, 4096), (64, 64, 5));
        // As many tiles as multiprocessors: two slices each.
        assert_eq!(schedule(1, 128, 4096, 4096), (64, 64, 2));
        // Too shallow to split: each slice would be under 8 k-blocks.
        assert_eq!(schedule(1, 1, 4096, 512).2, 1);
        assert_eq!(schedule(1, 64, 64, 64).2, 1);
        // Enough tiles already.
        assert_eq!(schedule(1, 4096, 4096, 4096), (128, 256, 1));
        assert_eq!(schedule(1, 256, 4096, 4096), (64, 128, 1));
        assert_eq!(schedule(8, 1024, 1024, 1024).2, 1);
        assert_eq!(schedule(64, 128, 128, 128).2, 1);
        // A k-block is one 128-byte line: 32 f32 elements, so f32 splits a shallower `k`.
        assert_eq!(Schedule::choose(132, 1, 1, 4096, 512, 4, true).splits, 2);
    }

    #[test]
    fn split_k_stages_hold_only_the_lhs_rows_there_are() {
        let tile = |m, lhs_k_major| Schedule::choose(132, 1, m, 4096, 4096, 2, lhs_k_major).tile;
        // At most 8, 16 or 32 rows: that many rows of `lhs` a stage, more stages of the weight.
        for (m, rows, stages) in [(1, 8, 9), (8, 8, 9), (9, 16, 9), (16, 16, 9), (17, 32, 7)] {
            let short = tile(m, true);
            assert_eq!((short.m, short.n), (64, 64), "m = {m}");
            assert_eq!((short.lhs_rows, short.stages), (rows, stages), "m = {m}");
        }
        // More rows, or an M-major `lhs` (read in 64-row panels): whole 64-row stages.
        assert_eq!(tile(33, true), Schedule::split_tile());
        assert_eq!(tile(1, false), Schedule::split_tile());
        // Whole tiles never shorten their `lhs` stages.
        for tile in TileShape::all() {
            assert_eq!(tile.lhs_rows, tile.m, "{tile:?}");
        }
        // Batches: each tile's rows are one batch's.
        let batched = Schedule::choose(132, 4, 16, 1024, 4096, 2, true);
        assert_eq!((batched.tile.lhs_rows, batched.splits), (16, 4));
    }

    #[test]
    fn every_tile_shape_fits_its_ring_in_shared_memory() {
        for tile in TileShape::all() {
            assert!(tile.stages >= 4, "{tile:?}");
            assert!(tile.stages * tile.stage_bytes() <= RING_BYTES, "{tile:?}");
        }
        // A whole cube in f32 (the largest elements): the ring, two 64-row output chunks of
        // one line per row per consumer warpgroup, the staged bias and the barriers, within the
        // 227 KiB a cube may use.
        for tile in TileShape::all() {
            let cube_bytes = tile.stages * tile.stage_bytes()
                + tile.consumers() * (2 * 64 * LINE_BYTES + tile.n * 4)
                + tile.stages * 16;
            assert!(cube_bytes <= 232_448, "{tile:?}: {cube_bytes}");
        }
        // Two split-K cubes, each with its ring, two 64 x 64 output buffers, the staged bias
        // and the barriers, in one multiprocessor's 228 KiB (1 KiB of it reserved per cube).
        // A short-`lhs` ring also holds the rows its last stage's MMAs read past its end.
        for split in Schedule::split_tiles() {
            assert!(split.stages >= 5, "{split:?}");
            assert_eq!(split.lhs_rows % 8, 0, "{split:?}: whole swizzle atoms");
            let barriers = (2 * split.stages + Schedule::MAX_SPLITS) * 8;
            assert!(barriers <= 256, "{split:?}: {barriers} bytes of barriers");
            let cube_bytes = split.stages * split.stage_bytes()
                + split.lhs_tail_bytes()
                + 2 * 64 * LINE_BYTES
                + 64 * 4
                + 256
                + 1024;
            assert!(2 * cube_bytes <= 228 * 1024, "{split:?}: {cube_bytes}");
        }
    }

    #[test]
    fn no_batch_and_full_broadcast_fold_to_no_coordinate() {
        assert_eq!(fold_batch(&[], &[]), Some(None));
        assert_eq!(fold_batch(&[0, 0], &[3, 4]), Some(None));
        // A dim of one element never moves the offset, whatever its stride.
        assert_eq!(fold_batch(&[77, 0], &[1, 4]), Some(None));
    }

    #[test]
    fn nested_batch_dims_fold_into_one_stride() {
        assert_eq!(fold_batch(&[40, 10], &[3, 4]), Some(Some(10)));
        assert_eq!(fold_batch(&[10], &[5]), Some(Some(10)));
        assert_eq!(fold_batch(&[99, 40, 10], &[1, 3, 4]), Some(Some(10)));
    }

    #[test]
    fn mixed_or_gapped_batch_dims_do_not_fold() {
        // Broadcast on one dim, strided on the other.
        assert_eq!(fold_batch(&[0, 10], &[3, 4]), None);
        assert_eq!(fold_batch(&[10, 0], &[3, 4]), None);
        // Strided but not nested (a sliced batch).
        assert_eq!(fold_batch(&[80, 10], &[3, 4]), None);
    }
}
