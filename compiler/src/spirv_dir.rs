//! `--emit spirv`: each method's compute shaders as `.spv`
//! files (with the WGSL they were made from), the constants buffer, and a
//! manifest saying how to run them: buffers and their views, bindings, the
//! texels the shaders fetch through one texel buffer view (which the
//! device's `maxTexelBufferElements` must allow), dispatch order,
//! workgroup counts, the 32-bit push constants each dispatch gives its
//! shader (where its tensors lie), the byte ranges it reads and writes
//! (each value's, with the order its dimensions lie in there), and
//! the segments a run goes through (runs of dispatches on the device, and
//! the kernels the CPU runs between them, each with why no shader does).

use std::path::Path;

use ptec_codegen::{BufferRange, VulkanMethod, VulkanSegment};
use ptec_runtime::TensorSlot;
use serde_json::{Value, json};

use crate::emit::write;
use crate::error::Error;

/// Writes the shaders of `methods` (name and compiled method) into
/// `directory`, creating it.
pub fn write_directory(directory: &Path, methods: &[VulkanMethod]) -> Result<(), Error> {
    std::fs::create_dir_all(directory).map_err(|source| Error::Io {
        what: format!("creating {}", directory.display()),
        source,
    })?;
    let write = |name: &str, bytes: &[u8]| write(&directory.join(name), bytes);
    let mut manifests = Vec::new();
    for method in methods {
        let name = &method.abi.name;
        let mut shaders = Vec::new();
        for (index, shader) in method.shaders.iter().enumerate() {
            let stem = format!("{name}_{index:03}");
            let words: Vec<u8> = shader
                .spirv
                .iter()
                .flat_map(|word| word.to_le_bytes())
                .collect();
            write(&format!("{stem}.spv"), &words)?;
            write(&format!("{stem}.wgsl"), shader.wgsl.as_bytes())?;
            shaders.push(json!({
                "spirv": format!("{stem}.spv"),
                "wgsl": format!("{stem}.wgsl"),
                "entry_point": "main",
                "workgroup_size": [VulkanMethod::WORKGROUP_SIZE, 1, 1],
            }));
        }
        let constants = format!("{name}_constants.bin");
        write(&constants, &method.constants)?;
        let ranges = |ranges: &[BufferRange]| -> Vec<Value> {
            ranges
                .iter()
                .map(|range| {
                    json!({
                        "value": range.value,
                        "buffer": range.buffer,
                        "offset": range.offset,
                        "bytes": range.bytes,
                        "dim_order": range.dim_order,
                    })
                })
                .collect()
        };
        let dispatches: Vec<Value> = method
            .dispatches
            .iter()
            .map(|dispatch| {
                json!({
                    "kernels": dispatch
                        .kernels
                        .iter()
                        .map(|kernel| json!({ "node": kernel.node, "op": kernel.op }))
                        .collect::<Vec<_>>(),
                    "shader": dispatch.shader,
                    "workgroups": dispatch.workgroups,
                    "push_constants": dispatch.push_constants,
                    "bindings": {
                        "arena": [dispatch.bindings.arena.start, dispatch.bindings.arena.end],
                        "constants": [dispatch.bindings.constants.start, dispatch.bindings.constants.end],
                    },
                    "reads": ranges(&dispatch.reads),
                    "writes": ranges(&dispatch.writes),
                })
            })
            .collect();
        let segments: Vec<Value> = method
            .segments
            .iter()
            .map(|segment| match segment {
                VulkanSegment::Device { dispatches } => json!({
                    "runs_on": "device",
                    "dispatches": [dispatches.start, dispatches.end],
                }),
                VulkanSegment::Cpu { kernels, .. } => json!({
                    "runs_on": "cpu",
                    "kernels": kernels
                        .iter()
                        .map(|kernel| json!({
                            "node": kernel.node.to_string(),
                            "op": kernel.op,
                            "reason": kernel.reason,
                        }))
                        .collect::<Vec<_>>(),
                }),
            })
            .collect();
        manifests.push(json!({
            "name": name,
            "buffers": [
                {"binding": 0, "name": "arena", "bytes": method.abi.arena_bytes, "access": "read_write"},
                {"binding": 1, "name": "constants", "bytes": method.constants.len(), "access": "read", "file": constants},
                {"binding": 2, "name": "arena", "view": "quads", "bytes": method.abi.arena_bytes, "access": "read_write"},
                {"binding": 3, "name": "constants", "view": "texels", "format": "R32G32B32A32_UINT", "bytes": method.constants.len(), "access": "read", "file": constants},
                {"binding": 4, "name": "arena", "view": "texels", "format": "R32G32B32A32_UINT", "bytes": method.abi.arena_bytes, "access": "read"},
            ],
            "texel_buffer_elements": method.texels,
            "inputs": method.abi.inputs.iter().map(slot).collect::<Vec<_>>(),
            "outputs": method.abi.outputs.iter().map(slot).collect::<Vec<_>>(),
            "shaders": shaders,
            "dispatches": dispatches,
            "segments": segments,
        }));
    }
    let manifest = json!({
        "format": "ptec-spirv-3",
        "target_env": "vulkan1.1",
        "descriptor_set": 0,
        "methods": manifests,
    });
    // A `Value`'s alternate form is its pretty JSON.
    write("manifest.json", format!("{manifest:#}").as_bytes())
}

/// A boundary tensor: where it lives in the arena and what it holds.
fn slot(slot: &TensorSlot) -> Value {
    let sizes: Vec<Value> = slot
        .shape
        .iter()
        .map(|dim| match dim {
            ptec_runtime::DimSpec::Fixed(size) => json!(size),
            ptec_runtime::DimSpec::Symbol(_) => Value::Null,
        })
        .collect();
    json!({
        "offset": slot.offset,
        "dtype": slot.element.name(),
        "sizes": sizes,
        "dim_order": slot.dim_order,
    })
}
