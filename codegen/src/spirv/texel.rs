//! Texel buffers in SPIR-V, which WGSL cannot declare: the shaders declare
//! their texel buffers (the constants' and the arena's quads,
//! `wgsl::BUFFERS`) as 1D textures of `u32` read with `textureLoad` at
//! level 0 and sized with `textureDimensions`, and this pass makes every 1D
//! image of a module naga wrote a buffer image: the image type's dimension
//! `Buffer` (the descriptor a uniform texel buffer), the `Sampled1D`
//! capability `SampledBuffer`, and each fetch and size query without its
//! level operand, which buffer images do not take.
//! The shaders declare no other image, so every fetch reads a texel buffer.

use super::words::{CAPABILITY, Instruction, instructions};

/// Opcodes, operands and enumerants (SPIR-V specification, section 3).
mod spec {
    pub const TYPE_IMAGE: u32 = 25;
    pub const IMAGE_FETCH: u32 = 95;
    pub const IMAGE_QUERY_SIZE_LOD: u32 = 103;
    pub const IMAGE_QUERY_SIZE: u32 = 104;
    pub const CAPABILITY_SAMPLED_1D: u32 = 43;
    pub const CAPABILITY_SAMPLED_BUFFER: u32 = 46;
    pub const DIM_1D: u32 = 0;
    pub const DIM_BUFFER: u32 = 5;
    /// The image operands of a fetch that names only a level of detail.
    pub const OPERANDS_LOD: u32 = 0x2;
    /// Words of an `OpImageFetch` without image operands: opcode, result
    /// type, result, image and coordinate.
    pub const FETCH_WORDS: usize = 5;
    /// Words of an `OpImageQuerySize`: opcode, result type, result, image.
    pub const QUERY_WORDS: usize = 4;
}

/// The module with its 1D images made texel buffers. `words` is a module
/// naga wrote, so its instructions are well formed; a malformed one is
/// returned unchanged.
pub(super) fn texel_buffers(words: Vec<u32>) -> Vec<u32> {
    let Some(instructions) = instructions(&words) else {
        return words;
    };
    let mut out = Vec::with_capacity(words.len());
    out.extend_from_slice(&words[..instructions.first().map_or(words.len(), |first| first.at)]);
    for Instruction { at, op, count } in instructions {
        let start = out.len();
        out.extend_from_slice(&words[at..at + count]);
        let instruction = &mut out[start..];
        match op {
            CAPABILITY if instruction[1] == spec::CAPABILITY_SAMPLED_1D => {
                instruction[1] = spec::CAPABILITY_SAMPLED_BUFFER;
            }
            spec::TYPE_IMAGE if count > 3 && instruction[3] == spec::DIM_1D => {
                instruction[3] = spec::DIM_BUFFER;
            }
            spec::IMAGE_FETCH
                if count == spec::FETCH_WORDS + 2 && instruction[5] == spec::OPERANDS_LOD =>
            {
                instruction[0] = ((spec::FETCH_WORDS as u32) << 16) | spec::IMAGE_FETCH;
                out.truncate(start + spec::FETCH_WORDS);
            }
            spec::IMAGE_QUERY_SIZE_LOD if count == spec::QUERY_WORDS + 1 => {
                instruction[0] = ((spec::QUERY_WORDS as u32) << 16) | spec::IMAGE_QUERY_SIZE;
                out.truncate(start + spec::QUERY_WORDS);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::to_spirv;
    use super::super::words::{CAPABILITY, instructions};
    use super::spec;

    /// A shader fetching a quad of a 1D texture within its size, as the
    /// prelude's `arena_quad` does.
    const FETCH: &str = "
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var quads: texture_1d<u32>;
@compute @workgroup_size(1)
fn main() { out[0] = textureLoad(quads, min(3u, textureDimensions(quads) - 1u), 0).y; }
";

    #[test]
    fn one_dimensional_images_become_texel_buffers() {
        let words = to_spirv(FETCH).expect("the shader compiles");
        let found = instructions(&words).expect("a well-formed module");
        let operands = |op| {
            found
                .iter()
                .filter(move |instruction| instruction.op == op)
                .map(|instruction| &words[instruction.at..instruction.at + instruction.count])
        };
        let capabilities: Vec<u32> = operands(CAPABILITY).map(|words| words[1]).collect();
        assert!(
            capabilities.contains(&spec::CAPABILITY_SAMPLED_BUFFER),
            "{capabilities:?}"
        );
        assert!(
            !capabilities.contains(&spec::CAPABILITY_SAMPLED_1D),
            "{capabilities:?}"
        );
        let dims: Vec<u32> = operands(spec::TYPE_IMAGE).map(|words| words[3]).collect();
        assert_eq!(dims, [spec::DIM_BUFFER]);
        let fetches: Vec<usize> = operands(spec::IMAGE_FETCH).map(<[u32]>::len).collect();
        assert_eq!(fetches, [spec::FETCH_WORDS]);
        let sizes: Vec<usize> = operands(spec::IMAGE_QUERY_SIZE).map(<[u32]>::len).collect();
        assert_eq!(sizes, [spec::QUERY_WORDS]);
        assert_eq!(operands(spec::IMAGE_QUERY_SIZE_LOD).count(), 0);
    }
}
