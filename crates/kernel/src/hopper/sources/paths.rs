//! The CUDA C++ of every path but the whole-tile kernel: the few-row products, split-K's
//! second kernels and the transposed products, at each configuration the launch can ask for.

use super::{compile, cube_settings, dump, hopper_properties, tensor_arg};
use crate::epilogue::Epilogue;
use crate::hopper::few_rows::{ROWS, few_rows_partials::FewRowsPartials};
use crate::hopper::few_rows_cluster::few_rows_cluster_product::FewRowsClusterProduct;
use crate::hopper::few_rows_tma::few_rows_tma_partials::FewRowsTmaPartials;
use crate::hopper::split_k::{
    finish_columns::FinishColumns, finish_slice_groups::FinishSliceGroups,
};
use crate::hopper::swapped::swapped_partials::SwappedPartials;
use crate::hopper::swapped_tiles::swapped_tiles_product::SwappedTilesProduct;
use crate::hopper::swapped_tma::swapped_tma_partials::SwappedTmaPartials;
use crate::hopper::wgmma::Operand;
use cubecl::ir::AddressType;
use cubecl::prelude::*;
use std::sync::Arc;

/// The few-row kernel's partial sums, for each row count and weight vector width: the `lhs`
/// tile is read as 16-byte vectors (`ld.shared.v4` once through the assembler), a quarter of
/// the FMAs, and under four columns a unit the weight too.
#[test]
fn few_row_kernels_compile_to_cuda_with_vector_tile_reads() {
    for (rows, vector, capacity) in ROWS
        .into_iter()
        .map(|rows| (rows, 1, 128))
        .chain([(4, 4, 256)])
    {
        let settings = cube_settings(256);
        let definition = FewRowsPartials::new(
            settings,
            hopper_properties(),
            Arc::new(Default::default()),
            tensor_arg(),
            tensor_arg(),
            tensor_arg(),
            (),
            vector,
            rows,
            capacity,
            Operand::Tf32.elem_type(),
        )
        .define();
        let name = format!("few_rows_{rows}_v{vector}");
        let source = compile(definition, &name);
        dump(&format!("{name}.cu"), &source);
        assert!(source.contains("float_4"), "{name}: no vector tile");
    }
}

/// Split-K's second kernels, for each epilogue and vector width (four columns a unit move in
/// 16-byte loads and stores).
#[test]
fn split_k_finish_compiles_to_cuda_with_vector_loads() {
    for epilogue in [Epilogue::Plain, Epilogue::BiasRelu, Epilogue::BiasReluMask] {
        for vector in [1, 4] {
            let settings = cube_settings(256 / vector as u32);
            let definition = FinishColumns::new(
                settings.clone(),
                hopper_properties(),
                Arc::new(Default::default()),
                tensor_arg(),
                tensor_arg(),
                tensor_arg(),
                tensor_arg(),
                vector,
                epilogue,
                Operand::Tf32.elem_type(),
            )
            .define();
            let name = format!("finish_columns_{vector}_{epilogue:?}");
            let source = compile(definition, &name);
            dump(&format!("{name}.cu"), &source);
            assert_eq!(source.contains("float_4"), vector == 4, "{name}");
            let settings = cube_settings(256);
            let definition = FinishSliceGroups::new(
                settings,
                hopper_properties(),
                Arc::new(Default::default()),
                tensor_arg(),
                tensor_arg(),
                tensor_arg(),
                tensor_arg(),
                vector,
                epilogue,
                Operand::Tf32.elem_type(),
            )
            .define();
            let name = format!("finish_groups_{vector}_{epilogue:?}");
            let source = compile(definition, &name);
            dump(&format!("{name}.cu"), &source);
            assert_eq!(source.contains("float_4"), vector == 4, "{name}");
        }
    }
}

/// The swapped kernel's partial sums, for each row count and way of copying: four TF32 MMAs a
/// stage with `A` in registers, fed by a shared-memory ring that `cp.async` fills (written
/// through the generic proxy, so fenced for the async one).
#[test]
fn swapped_kernels_compile_to_cuda_with_register_a_mmas() {
    let copies = [(true, true), (false, false)];
    for (rows, (pairs, pieces)) in crate::hopper::transposed::ROWS
        .into_iter()
        .flat_map(|rows| copies.map(|copy| (rows, copy)))
    {
        let warpgroups = crate::hopper::swapped::warpgroups(rows);
        let settings = cube_settings(128 * warpgroups as u32);
        let definition = SwappedPartials::new(
            settings,
            hopper_properties(),
            Arc::new(Default::default()),
            tensor_arg(),
            tensor_arg(),
            tensor_arg(),
            (),
            rows / 2,
            rows,
            warpgroups,
            pairs,
            pieces,
        )
        .define();
        let name = format!(
            "swapped_{rows}{}",
            if pairs { "_vector" } else { "_scalar" }
        );
        let source = compile(definition, &name);
        dump(&format!("{name}.cu"), &source);
        let (a_copy, b_copy) = if pairs { (8, 16) } else { (4, 4) };
        for needle in [
            format!("wgmma.mma_async.sync.aligned.m64n{rows}k8.f32.tf32.tf32"),
            "fence.proxy.async.shared::cta".to_string(),
            format!("cp.async.ca.shared.global [%0], [%1], {a_copy}, %2;"),
            format!("cp.async.ca.shared.global [%0], [%1], {b_copy}, %2;"),
            "cp.async.wait_group 2;".to_string(),
        ] {
            assert!(source.contains(&needle), "{name}: no `{needle}`");
        }
    }
}

/// The TMA-fed swapped kernel, for each row count: four TF32 MMAs a stage with `A` in
/// registers, its stages filled by 3-d TMA copies that complete on the stages' mbarriers.
#[test]
fn swapped_tma_kernels_compile_to_cuda_with_register_a_mmas() {
    for rows in crate::hopper::transposed::ROWS {
        let warpgroups = crate::hopper::swapped_tma::WARPGROUPS;
        let stages = crate::hopper::swapped_tma::stages(rows, warpgroups);
        let settings = cube_settings(128 * warpgroups as u32 + 32);
        let definition = SwappedTmaPartials::new(
            settings,
            hopper_properties(),
            Arc::new(Default::default()),
            (),
            (),
            tensor_arg(),
            (),
            (),
            (),
            (),
            rows / 2,
            rows,
            warpgroups,
            stages,
            true,
            false,
        )
        .define();
        let name = format!("swapped_tma_{rows}");
        let source = compile(definition, &name);
        dump(&format!("{name}.cu"), &source);
        assert_register_a_mmas_fed_by_tma(&source, &name, rows);
    }
}

/// A transposed product's source (`name`): TF32 MMAs of `n` columns with `A` in registers,
/// its stages filled by 3-d TMA copies that complete on the stages' mbarriers.
fn assert_register_a_mmas_fed_by_tma(source: &str, name: &str, n: usize) {
    for needle in [
        format!("wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32"),
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            .to_string(),
        "mbarrier.arrive.expect_tx.shared::cta.b64".to_string(),
    ] {
        assert!(source.contains(&needle), "{name}: no `{needle}`");
    }
}

/// The transposed product over whole tiles, at each epilogue and either bias: eight TF32 MMAs
/// of the tile's rows a stage with `A` in registers (four a warpgroup), its stages filled by
/// 3-d TMA copies from the tile's first row.
#[test]
fn swapped_tile_kernels_compile_to_cuda_with_register_a_mmas() {
    use crate::hopper::swapped_tiles::{ROWS, STAGES, WARPGROUPS};
    for (epilogue, row_broadcast) in [
        (Epilogue::Plain, false),
        (Epilogue::BiasRelu, true),
        (Epilogue::BiasRelu, false),
        (Epilogue::BiasReluMask, true),
    ] {
        let settings = cube_settings(128 * WARPGROUPS as u32 + 32);
        let definition = SwappedTilesProduct::new(
            settings,
            hopper_properties(),
            Arc::new(Default::default()),
            (),
            (),
            tensor_arg(),
            tensor_arg(),
            tensor_arg(),
            (),
            (),
            (),
            ROWS / 2,
            ROWS,
            WARPGROUPS,
            STAGES,
            epilogue,
            row_broadcast,
            true,
            false,
        )
        .define();
        let name = format!("swapped_tiles_{epilogue:?}_{row_broadcast}");
        let source = compile(definition, &name);
        dump(&format!("{name}.cu"), &source);
        assert_register_a_mmas_fed_by_tma(&source, &name, ROWS);
        // The mask's words: a warp's half over its lanes, the halves met behind a warpgroup's
        // barrier.
        for needle in ["__shfl_xor_sync", "bar.sync"] {
            assert_eq!(
                source.contains(needle),
                epilogue == Epilogue::BiasReluMask,
                "{name}: `{needle}`"
            );
        }
    }
}

/// The TMA-fed few-row partial sums, at each row count compiled: a producer unit's tensor
/// copies completing on the ring's barriers, and the `lhs` rows read four `k` at a time.
#[test]
fn few_row_tma_kernels_compile_to_cuda_with_tensor_copies() {
    for rows in [4, 8] {
        let settings = KernelSettings::new(
            *CubeDim::new_1d(crate::hopper::few_rows_tma::UNITS as u32 + 32),
            ExecutionMode::Unchecked,
            AddressType::U32,
        );
        let definition = FewRowsTmaPartials::new(
            settings,
            hopper_properties(),
            Arc::new(Default::default()),
            (),
            (),
            tensor_arg(),
            (),
            (),
            (),
            (),
            rows,
            crate::hopper::few_rows_tma::STAGES,
            true,
            false,
        )
        .define();
        let name = format!("few_rows_tma_{rows}");
        let source = compile(definition, &name);
        dump(&format!("{name}.cu"), &source);
        for needle in [
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
            "mbarrier.arrive.expect_tx.shared::cta.b64",
            "float_4",
        ] {
            assert!(source.contains(needle), "{name}: no `{needle}`");
        }
    }
}

/// The few-row product in one launch, at each row count, cluster size and epilogue: the
/// cluster's dims, its relaxed barrier, the remote arrival and asynchronous stores of the
/// hand-over, and the mask's shuffles where it writes the mask.
#[test]
fn few_row_cluster_kernels_compile_to_cuda_with_remote_stores() {
    let epilogues = [Epilogue::Plain, Epilogue::BiasRelu, Epilogue::BiasReluMask];
    for (rows, slices, epilogue) in [4, 8].into_iter().flat_map(|rows| {
        (1..=crate::hopper::few_rows_cluster::MAX_SLICES)
            .flat_map(move |s| epilogues.map(move |e| (rows, s, e)))
    }) {
        let settings = KernelSettings::new(
            *CubeDim::new_1d(crate::hopper::few_rows_cluster::UNITS as u32 + 32),
            ExecutionMode::Unchecked,
            AddressType::U32,
        );
        let definition = FewRowsClusterProduct::new(
            settings,
            hopper_properties(),
            Arc::new(Default::default()),
            (),
            (),
            tensor_arg(),
            tensor_arg(),
            tensor_arg(),
            (),
            (),
            (),
            (),
            rows,
            slices,
            crate::hopper::few_rows_cluster::BOXES,
            crate::hopper::few_rows_cluster::STAGES,
            crate::hopper::few_rows_cluster::PARTS,
            epilogue,
            true,
            false,
        )
        .define();
        let name = format!("few_rows_cluster_{rows}_{slices}_{epilogue:?}");
        let source = compile(definition, &name);
        dump(&format!("{name}.cu"), &source);
        let mut needles = vec![
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
            "float_4",
        ];
        if slices > 1 {
            needles.extend([
                "__cluster_dims__",
                "barrier.cluster.arrive.relaxed",
                "mbarrier.arrive.relaxed.cluster.shared::cluster.b64",
                "st.async.shared::cluster.mbarrier::complete_tx::bytes.f32",
            ]);
            // No released cluster barrier: each fences every store in flight.
            assert!(
                !source.contains("barrier.cluster.arrive.release"),
                "{name}: a released cluster barrier"
            );
        } else {
            assert!(
                !source.contains("barrier.cluster"),
                "{name}: a cluster barrier"
            );
        }
        if epilogue == Epilogue::BiasReluMask {
            needles.push("__shfl_xor_sync");
        }
        for needle in needles {
            assert!(source.contains(needle), "{name}: no `{needle}`");
        }
    }
}
