//! How the whole-tile kernel cuts a problem's work: the output tile a cube computes at a time
//! and its ring's depth, and how many slices of `k` each tile's sum is cut into (split-K).
//! Plain Rust, unit-tested on any machine.

use super::layout::{LINE_BYTES, line_elems};

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
    /// `processors` multiprocessors: the one the heuristic runs.
    ///
    /// A problem with few output rows (a `Linear` at inference batch sizes) is bound by
    /// streaming `rhs`, and with one tile per cube each cube walks all of `k` in sequence: too
    /// few cubes, each with too long a chain. When the smallest tiles are no more than the
    /// multiprocessors, the `k` of each tile is split across up to two cubes per
    /// multiprocessor instead ([`split_k`](Self::split_k)). Otherwise the tiles alone spread
    /// the work ([`whole_tiles`](Self::whole_tiles)).
    pub fn choose(
        processors: usize,
        batch: usize,
        m: usize,
        n: usize,
        k: usize,
        elem_size: usize,
        lhs_k_major: bool,
    ) -> Self {
        if Self::splits(processors, batch, m, n, k, elem_size) >= 2 {
            Self::split_k(processors, batch, m, n, k, elem_size, lhs_k_major)
                .expect("two slices need two k-blocks")
        } else {
            Self::whole_tiles(processors, batch, m, n)
        }
    }

    /// Whole tiles, no split: the largest tile that still keeps three quarters of the
    /// multiprocessors busy ([`TileShape::choose`]).
    pub fn whole_tiles(processors: usize, batch: usize, m: usize, n: usize) -> Self {
        let tile = TileShape::choose(processors, |tile_m, tile_n| {
            m.div_ceil(tile_m) * n.div_ceil(tile_n) * batch
        });
        Self { tile, splits: 1 }
    }

    /// Split-K: the slices [`choose`](Self::choose) would cut each tile's `k` into, at least
    /// two (the schedule of a pinned split-K kernel, on a problem the heuristic would not
    /// split); `None` where `k` has fewer than two k-blocks. With at most 32 rows and `lhs`
    /// K-major (`lhs_k_major`), a split-K stage holds only the rows there are, so that the ring
    /// holds more of the weight ([`short_lhs_split_tile`](Self::short_lhs_split_tile)).
    pub fn split_k(
        processors: usize,
        batch: usize,
        m: usize,
        n: usize,
        k: usize,
        elem_size: usize,
        lhs_k_major: bool,
    ) -> Option<Self> {
        if k.div_ceil(line_elems(elem_size)) < 2 {
            return None;
        }
        let splits = Self::splits(processors, batch, m, n, k, elem_size).max(2);
        let short_rows = Self::SHORT_LHS_ROWS.into_iter().find(|&rows| m <= rows);
        let tile = match short_rows {
            Some(rows) if lhs_k_major => Self::short_lhs_split_tile(rows),
            _ => Self::split_tile(),
        };
        Some(Self { tile, splits })
    }

    /// The slices that keep two split-K cubes a multiprocessor busy, within the slices' least
    /// depth and the most a cluster's first cube can receive: below 2, no split.
    fn splits(
        processors: usize,
        batch: usize,
        m: usize,
        n: usize,
        k: usize,
        elem_size: usize,
    ) -> usize {
        let (tile_m, tile_n) = Self::SPLIT_TILE;
        let tiles = batch * m.div_ceil(tile_m) * n.div_ceil(tile_n);
        (2 * processors / tiles.max(1))
            .min(k.div_ceil(line_elems(elem_size)) / Self::MIN_SLICE_BLOCKS)
            .min(Self::MAX_SPLITS)
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
    fn a_pinned_split_k_splits_whatever_the_heuristic_would_do() {
        // The heuristic's split where it splits.
        let split = |b, m, n, k| Schedule::split_k(132, b, m, n, k, 2, true);
        assert_eq!(
            split(1, 1, 4096, 4096),
            Some(Schedule::choose(132, 1, 1, 4096, 4096, 2, true))
        );
        // Two slices where it would not: enough tiles, or too shallow a `k`.
        let large = split(1, 4096, 4096, 4096).unwrap();
        assert_eq!((large.tile, large.splits), (Schedule::split_tile(), 2));
        assert_eq!(split(1, 1, 4096, 512).unwrap().splits, 2);
        assert_eq!(split(1, 64, 64, 128).unwrap().splits, 2);
        // One k-block (64 half-precision elements) cannot be split.
        assert_eq!(split(1, 64, 64, 64 + 1).map(|s| s.splits), Some(2));
        assert_eq!(split(1, 64, 64, 64), None);
    }
}
