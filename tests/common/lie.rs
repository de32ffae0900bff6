//! Programs that lie: a committed fixture whose flatbuffer is decoded with
//! the project's own schema bindings, with one field changed and the bytes
//! written back. Every other byte stays as ExecuTorch wrote it, so the file
//! is still a well-formed flatbuffer that only says something false.
//!
//! Fields are changed in place: a [`Patch`] is found through the bindings
//! (a table's field, a vector's element or its length) and records where
//! that is in memory, so that it applies to the fixture's bytes wherever the
//! table lies, in the program, the bundled program around it, or a delegate
//! payload inside it.

use std::path::{Path, PathBuf};

use flatbuffers::{Table, VOffsetT};
use ptec_schema::{bundled as bfb, program as fb, vulkan as vfb, xnnpack as xfb};

/// A change to the bytes: `bytes` written at the memory address of a field
/// the bindings found.
pub struct Patch {
    address: usize,
    bytes: Vec<u8>,
}

impl Patch {
    /// Writes `bytes` over the scalar `field` of `table`, which the file
    /// must store (a field left at its default has no bytes to change).
    pub fn field(table: &Table<'_>, field: VOffsetT, bytes: &[u8]) -> Patch {
        let offset = table.vtable().get(field);
        assert_ne!(offset, 0, "field {field} is not stored in the table");
        let address = table.buf().as_ptr() as usize + table.loc() + usize::from(offset);
        Patch {
            address,
            bytes: bytes.to_vec(),
        }
    }

    /// Writes `bytes` over element `index` of a vector whose element bytes
    /// are `elements` (`Vector::bytes`), each `size` bytes long.
    pub fn element(elements: &[u8], size: usize, index: usize, bytes: &[u8]) -> Patch {
        assert!(
            (index + 1) * size <= elements.len(),
            "element {index} is past the vector"
        );
        Patch {
            address: elements.as_ptr() as usize + index * size,
            bytes: bytes.to_vec(),
        }
    }

    /// Shortens the string `string` (of the bindings) to `to`, which must
    /// be shorter: its length, its bytes and the terminating zero.
    pub fn shorter_string(string: &str, to: &str) -> Vec<Patch> {
        assert!(
            to.len() < string.len(),
            "{to:?} is not shorter than {string:?}"
        );
        let mut bytes = to.as_bytes().to_vec();
        bytes.push(0);
        vec![
            Patch::length(string.as_bytes(), to.len() as u32),
            Patch {
                address: string.as_ptr() as usize,
                bytes,
            },
        ]
    }

    /// Changes the length of the vector whose element bytes are `elements`.
    pub fn length(elements: &[u8], length: u32) -> Patch {
        Patch {
            address: elements.as_ptr() as usize - 4,
            bytes: length.to_le_bytes().to_vec(),
        }
    }
}

/// A fixture's bytes, to be changed.
pub struct Lie {
    bytes: Vec<u8>,
    /// Where the program's flatbuffer starts (inside a bundled program, the
    /// bytes of its `program` vector).
    program_at: usize,
}

impl Lie {
    /// `tests/fixtures/<name>`.
    pub fn of(name: &str) -> Lie {
        let path = super::repo_dir().join("tests/fixtures").join(name);
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
        let program_at = if bytes.get(4..8) == Some(b"BP08") {
            let bundled = bfb::root_as_bundled_program(&bytes).expect("a bundled program");
            let program = bundled
                .program()
                .expect("the bundled program holds a program");
            program.bytes().as_ptr() as usize - bytes.as_ptr() as usize
        } else {
            0
        };
        Lie { bytes, program_at }
    }

    /// The address of the first byte, to find where a slice of the
    /// bindings lies in the file.
    pub fn bytes_at(&self) -> usize {
        self.bytes.as_ptr() as usize
    }

    /// `length` bytes at `offset`, when the file has them.
    pub fn bytes(&self, offset: usize, length: usize) -> Option<&[u8]> {
        self.bytes.get(offset..offset + length)
    }

    /// The bundled program, decoded (the fixture must be one).
    pub fn bundled(&self) -> bfb::BundledProgram<'_> {
        bfb::root_as_bundled_program(&self.bytes).expect("a bundled program")
    }

    /// The program, decoded.
    pub fn program(&self) -> fb::Program<'_> {
        fb::root_as_program(&self.bytes[self.program_at..]).expect("the fixture's program")
    }

    /// The flatbuffer of the first delegate payload whose header carries
    /// `tag` (`XH00`, `VH00`).
    fn payload(&self, tag: &[u8; 4]) -> &[u8] {
        let at = self
            .bytes
            .windows(4)
            .position(|window| window == tag)
            .unwrap_or_else(|| panic!("a payload with a {tag:?} header"))
            - 4;
        let u32_at = |offset: usize| {
            let field = &self.bytes[at + offset..at + offset + 4];
            u32::from_le_bytes(field.try_into().expect("four bytes")) as usize
        };
        let (start, size) = (at + u32_at(10), u32_at(14));
        &self.bytes[start..start + size]
    }

    /// The XNNPACK graph of the first delegate payload with an `XH00`
    /// header, decoded.
    pub fn xnnpack_graph(&self) -> xfb::XNNGraph<'_> {
        xfb::root_as_xnngraph(self.payload(b"XH00")).expect("the XNNPACK graph")
    }

    /// The Vulkan graph of the first delegate payload with a `VH00`
    /// header, decoded.
    pub fn vulkan_graph(&self) -> vfb::VkGraph<'_> {
        vfb::root_as_vk_graph(self.payload(b"VH00")).expect("the Vulkan graph")
    }

    /// Applies patches found through [`Lie::program`],
    /// [`Lie::xnnpack_graph`] or [`Lie::vulkan_graph`] (a function of this lie's bytes, so that the
    /// addresses are of these bytes).
    pub fn patch(mut self, find: impl FnOnce(&Lie) -> Vec<Patch>) -> Lie {
        let patches = find(&self);
        let base = self.bytes.as_ptr() as usize;
        for patch in patches {
            let at = patch.address - base;
            self.bytes[at..at + patch.bytes.len()].copy_from_slice(&patch.bytes);
        }
        self
    }

    /// Writes the lie as `dir/name` and returns its path.
    pub fn save(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, &self.bytes).expect("the lie is written");
        path
    }
}

/// The instructions of the first chain of the first method, with their
/// indices.
pub fn instructions<'a>(
    program: &fb::Program<'a>,
) -> impl Iterator<Item = (usize, fb::Instruction<'a>)> + use<'a> {
    let plan = program.execution_plan().expect("a plan").get(0);
    let chain = plan.chains().expect("chains").get(0);
    chain
        .instructions()
        .expect("instructions")
        .iter()
        .enumerate()
}

/// The first instruction of the first chain that satisfies `test`, with its
/// index.
pub fn find_instruction<'a>(
    program: &fb::Program<'a>,
    test: impl Fn(&fb::Instruction<'a>) -> bool,
) -> (usize, fb::Instruction<'a>) {
    instructions(program)
        .find(|(_, instruction)| test(instruction))
        .expect("the instruction the lie changes")
}

/// Value `index` of the first method.
pub fn value<'a>(program: &fb::Program<'a>, index: usize) -> fb::EValue<'a> {
    let plan = program.execution_plan().expect("a plan").get(0);
    plan.values().expect("values").get(index)
}
