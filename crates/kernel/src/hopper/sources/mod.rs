//! The Hopper kernels' CUDA C++, generated without a device: every compile-time configuration
//! must go through cubecl's CUDA C++ compiler and hold the instructions the design relies on.
//! With `FMAR_HOPPER_SOURCE_DIR` set, the sources are written there, to be compiled by NVRTC and
//! `ptxas` for `sm_90a` (`bench/scripts/offline_sass.py`, which CI runs): the resource report
//! and the SASS without a device. This module: the whole-tile kernel's configurations, and what
//! every source shares; `paths`: the other paths' kernels.

mod paths;

use crate::epilogue::Epilogue;
use crate::hopper::schedule::{Schedule, TileShape};
use crate::hopper::tiles::KernelConfig;
use crate::hopper::tiles::kernel::fused_matmul_add_relu_hopper::FusedMatmulAddReluHopper;
use crate::hopper::tiles::kernel::fused_matmul_add_relu_hopper_split_k::FusedMatmulAddReluHopperSplitK;
use crate::hopper::wgmma::Operand;
use cubecl::Compiler;
use cubecl::ir::{
    AddressType, DeviceIdentity, DeviceProperties, HardwareProperties, MemoryDeviceProperties,
    VectorSize, features::Features,
};
use cubecl::prelude::*;
use cubecl::profile::TimingMethod;
use cubecl_cpp::shared::{CompilationOptions, CppCompiler};
use cubecl_cpp::target::Cuda;
use std::sync::Arc;

/// An sm_90 device as cubecl-cuda describes one, for compiling without it.
fn hopper_properties() -> Arc<DeviceProperties> {
    let hardware = HardwareProperties {
        load_width: 128,
        vector_register_count: None,
        plane_size_min: 32,
        plane_size_max: 32,
        max_bindings: 1024,
        max_shared_memory_size: 232_448,
        max_cube_count: (u32::MAX, u32::from(u16::MAX), u32::from(u16::MAX)),
        max_units_per_cube: 1024,
        max_cube_dim: (1024, 1024, 64),
        num_streaming_multiprocessors: Some(132),
        num_tensor_cores: None,
        min_tensor_cores_dim: None,
        num_cpu_cores: None,
        last_level_cache_size: None,
        max_vector_size: VectorSize::MAX,
        cube_mma_reserved_shared_memory: 0,
    };
    let mut properties = DeviceProperties::new(
        Features::default(),
        MemoryDeviceProperties::new(u64::MAX, 256),
        hardware,
        TimingMethod::Device,
        DeviceIdentity {
            name: "offline sm_90".to_string(),
            fingerprint: crate::hopper::device::HOPPER_FINGERPRINT.to_string(),
            physical: None,
        },
    );
    cubecl_cpp::register_supported_types(&mut properties);
    Arc::new(properties)
}

/// A kernel's settings as fmar launches its Hopper kernels: `units` a cube, unchecked, 32-bit
/// addresses.
fn cube_settings(units: u32) -> KernelSettings {
    KernelSettings::new(
        *CubeDim::new_1d(units),
        ExecutionMode::Unchecked,
        AddressType::U32,
    )
}

/// The compilation argument of a plain tensor argument (no in-place reuse).
fn tensor_arg() -> TensorCompilationArg {
    TensorCompilationArg {
        meta: TensorMetaCompilationArg { len: (), rank: () },
        buffer: BufferCompilationArg { inplace: None },
    }
}

/// The CUDA C++ of the kernel compiled for `config`.
fn source(config: KernelConfig) -> String {
    let dtype = config.operand.elem_type();
    let settings = cube_settings(config.cube_units());
    // Settings, device, then each argument's compilation argument (the scalars `m`, `n`, `k`
    // and `batches` have none), the accumulator's size, and the compile-time arguments.
    macro_rules! define {
        ($kernel:ident) => {
            $kernel::new(
                settings,
                hopper_properties(),
                Arc::new(Default::default()),
                (),
                (),
                tensor_arg(),
                Default::default(),
                tensor_arg(),
                (),
                (),
                (),
                (),
                config.tile.n / 2,
                config,
                dtype,
            )
            .define()
        };
    }
    let definition = if config.splits > 1 {
        define!(FusedMatmulAddReluHopperSplitK)
    } else {
        define!(FusedMatmulAddReluHopper)
    };
    compile(definition, &format!("{config:?}"))
}

/// `definition` (of kernel `name`) through cubecl's CUDA C++ compiler, as cubecl-cuda sets it up
/// for compute capability 9.0.
fn compile(definition: KernelDefinition, name: &str) -> String {
    let mut options = CompilationOptions::default();
    options.supports_features.grid_constants = true;
    options.supports_features.clusters = true;
    options.supports_features.elect_sync = true;
    CppCompiler::<Cuda>::default()
        .compile(definition, &options)
        .unwrap_or_else(|error| panic!("{name} did not compile: {error:?}"))
        .to_string()
}

/// Writes `source` as `file` into `FMAR_HOPPER_SOURCE_DIR`, where that is set.
fn dump(file: &str, source: &str) {
    if let Ok(dir) = std::env::var("FMAR_HOPPER_SOURCE_DIR") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(format!("{dir}/{file}"), source).unwrap();
    }
}

/// Every compile-time configuration the launch can ask for.
fn configs() -> Vec<KernelConfig> {
    let mut all = Vec::new();
    for tile in TileShape::all().chain(Schedule::split_tiles()) {
        for bits in 0..1024u32 {
            let bit = |i: u32| bits & (1 << i) != 0;
            let config = KernelConfig {
                tile,
                lhs_m_major: bit(5),
                rhs_k_major: bit(0),
                lhs_batched: bit(1),
                rhs_batched: bit(2),
                operand: match (bit(3), bits >> 9) {
                    (_, 1) => Operand::Tf32,
                    (true, _) => Operand::Bf16,
                    (false, _) => Operand::F16,
                },
                bias_row_broadcast: bit(4),
                splits: if bit(6) { Schedule::MAX_SPLITS } else { 1 },
                epilogue: match (bit(7), bit(8)) {
                    (true, false) => Epilogue::Plain,
                    (false, true) => Epilogue::BiasReluMask,
                    _ => Epilogue::BiasRelu,
                },
            };
            // A plain product reads no bias.
            if bit(7) && bit(8) {
                continue;
            }
            // TF32 reads K-major operands only (the launch copies the others), and has one
            // type: bit 3 then means nothing.
            if config.operand == Operand::Tf32
                && (config.lhs_m_major || !config.rhs_k_major || bit(3))
            {
                continue;
            }
            let split_tile = Schedule::split_tiles().any(|split| split == tile);
            // Split-K runs its own tiles and rings; stages hold fewer `lhs` rows than the tile
            // only when `lhs` is K-major.
            let wanted = (config.splits > 1) == split_tile
                && (config.epilogue.bias_relu() || !config.bias_row_broadcast)
                && (tile.lhs_rows == tile.m || !config.lhs_m_major);
            if wanted {
                all.push(config);
            }
        }
    }
    all
}

#[test]
fn every_configuration_compiles_to_cuda_with_its_instructions() {
    for config in configs() {
        let source = source(config);
        let ty = config.operand.ptx();
        let mma = format!(
            "wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{ty}.{ty}",
            config.tile.n,
            config.operand.mma_k()
        );
        let load =
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                .to_string();
        // The epilogue stores through the TMA engine, half precisions after converting in
        // pairs and writing through `stmatrix`. Under split-K, the first cube of a cluster runs
        // it after the others' sums have landed in its shared memory.
        let store = "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group".to_string();
        let epilogue = if config.operand.half() {
            vec![
                format!("cvt.rn.{ty}x2.f32"),
                "stmatrix.sync.aligned.m8n8.x4.shared.b16".to_string(),
                store,
            ]
        } else {
            assert!(!source.contains("stmatrix"), "{config:?}: stmatrix for f32");
            vec![store]
        };
        // A first launch compiles the source with NVRTC, and `<cuda/barrier>` and the
        // cooperative-groups headers (cubecl's `Barrier` and TMA operations) took three quarters
        // of its time: the barriers and copies are inline PTX instead. Only the half-precision
        // type's header is left.
        let includes: Vec<&str> = source
            .lines()
            .filter(|line| line.starts_with("#include"))
            .collect();
        let half_header = match config.operand {
            Operand::Bf16 => vec!["#include <cuda_bf16.h>"],
            Operand::F16 => vec!["#include <cuda_fp16.h>"],
            Operand::Tf32 => vec![],
        };
        assert_eq!(includes, half_header, "{config:?}: the source's headers");
        let mut wanted = vec![
            mma,
            load,
            "mbarrier.arrive.expect_tx.shared::cta.b64".into(),
        ];
        wanted.extend(epilogue);
        let cluster = [
            "__cluster_dims__",
            "barrier.cluster.arrive",
            "mapa.shared::cluster.u32",
            "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32",
        ];
        for needle in cluster {
            assert_eq!(
                source.contains(needle),
                config.splits > 1,
                "{config:?}: `{needle}` in the source"
            );
        }
        for needle in wanted {
            assert!(
                source.contains(&needle),
                "{config:?}: no `{needle}` in the source"
            );
        }
        // The mask's words are gathered across each quad of units.
        assert_eq!(
            source.contains("__shfl_xor_sync"),
            config.epilogue.writes_mask(),
            "{config:?}: quad shuffles in the source"
        );
        // No 64-bit integer division or remainder: SASS has none, and the driver, which
        // assembles relocatable code, calls a subroutine for one; a call anywhere in a kernel
        // serialises every warpgroup MMA of it (ptxas's C7509, "serialized due to the presence
        // of Extern calls").
        if let Some(line) = source.lines().map(str::trim_start).find(|line| {
            (line.starts_with("uint64_t const ") || line.starts_with("int64_t const "))
                && (line.contains(" / ") || line.contains(" % "))
        }) {
            panic!("{config:?}: a 64-bit division in the source: `{line}`");
        }
        let name = format!(
            "hopper_{}x{}x{}{}_{ty}_lhs{}_rhs{}_lhsb{}_rhsb{}_bias{}{}{}.cu",
            config.tile.m,
            config.tile.n,
            config.tile.stages,
            if config.tile.lhs_rows < config.tile.m {
                format!("_lhsrows{}", config.tile.lhs_rows)
            } else {
                String::new()
            },
            if config.lhs_m_major { "M" } else { "K" },
            if config.rhs_k_major { "K" } else { "N" },
            u8::from(config.lhs_batched),
            u8::from(config.rhs_batched),
            if config.bias_row_broadcast {
                "row"
            } else {
                "full"
            },
            if config.splits > 1 { "_splitk" } else { "" },
            match config.epilogue {
                Epilogue::BiasRelu => "",
                Epilogue::BiasReluMask => "_mask",
                Epilogue::Plain => "_plain",
            },
        );
        dump(&name, &source);
    }
}
