//! A readable listing of the machine code a compilation generated, one
//! function after another (`ptec compile --emit asm`). On x86-64 the final
//! bytes are disassembled with iced-x86 in Intel syntax, with call and data
//! targets named; on other targets Cranelift's own listing of the code it
//! emitted is shown.

use std::fmt::Write as _;

use cranelift_codegen::Context;
use cranelift_codegen::ir::ExternalName;
use cranelift_codegen::{FinalizedMachReloc, FinalizedRelocTarget};
use cranelift_module::{DataId, FuncId, Module};
use iced_x86::{Decoder, DecoderOptions, Formatter as _, IntelFormatter};
use target_lexicon::{Architecture, Triple};

/// The functions of one compilation, in the order they were defined.
#[derive(Debug)]
pub struct Listing {
    triple: Triple,
    functions: Vec<ListedFunction>,
}

#[derive(Debug)]
struct ListedFunction {
    name: String,
    code: Vec<u8>,
    /// Byte offset and name of each relocation's target.
    targets: Vec<(u32, String)>,
    /// Cranelift's listing, for targets iced-x86 cannot decode.
    vcode: Option<String>,
}

impl Listing {
    pub(crate) fn new(triple: Triple) -> Listing {
        Listing {
            triple,
            functions: Vec::new(),
        }
    }

    /// Adds code that was assembled outside Cranelift (a microkernel).
    pub(crate) fn push_bytes(&mut self, name: &str, code: Vec<u8>) {
        self.functions.push(ListedFunction {
            name: name.to_string(),
            code,
            targets: Vec::new(),
            vcode: None,
        });
    }

    /// Adds a function `module` has just compiled from `context` (compiled
    /// with disassembly on).
    pub(crate) fn push_compiled(&mut self, module: &dyn Module, name: &str, context: &Context) {
        let Some(compiled) = context.compiled_code() else {
            return;
        };
        let targets = compiled
            .buffer
            .relocs()
            .iter()
            .map(|reloc| (reloc.offset, target_name(module, context, reloc)))
            .collect();
        self.functions.push(ListedFunction {
            name: name.to_string(),
            code: compiled.code_buffer().to_vec(),
            targets,
            vcode: compiled.vcode.clone(),
        });
    }

    /// The listing as text.
    pub fn render(&self) -> String {
        let mut text = String::new();
        for function in &self.functions {
            let _ = writeln!(text, "{}:  ; {} bytes", function.name, function.code.len());
            match (&self.triple.architecture, &function.vcode) {
                (Architecture::X86_64, _) => disassemble_x86_64(function, &mut text),
                (_, Some(vcode)) => text.push_str(vcode),
                (_, None) => {
                    let _ = writeln!(text, "  ; machine code not listed for this target");
                }
            }
            text.push('\n');
        }
        text
    }
}

fn target_name(module: &dyn Module, context: &Context, reloc: &FinalizedMachReloc) -> String {
    match &reloc.target {
        FinalizedRelocTarget::ExternalName(ExternalName::User(reference)) => {
            let name = &context.func.params.user_named_funcs()[*reference];
            let declarations = module.declarations();
            match name.namespace {
                0 => {
                    let id = FuncId::from_u32(name.index);
                    declarations
                        .get_function_decl(id)
                        .linkage_name(id)
                        .into_owned()
                }
                _ => {
                    let id = DataId::from_u32(name.index);
                    declarations.get_data_decl(id).linkage_name(id).into_owned()
                }
            }
        }
        FinalizedRelocTarget::ExternalName(other) => other.display(None).to_string(),
        FinalizedRelocTarget::Func(offset) => format!("{offset:#x}"),
    }
}

fn disassemble_x86_64(function: &ListedFunction, text: &mut String) {
    let mut decoder = Decoder::with_ip(64, &function.code, 0, DecoderOptions::NONE);
    let mut formatter = IntelFormatter::new();
    let mut instruction_text = String::new();
    for instruction in &mut decoder {
        instruction_text.clear();
        formatter.format(&instruction, &mut instruction_text);
        let (start, end) = (instruction.ip() as u32, instruction.next_ip() as u32);
        let _ = write!(text, "  {start:6x}  {instruction_text}");
        for (_, target) in function
            .targets
            .iter()
            .filter(|(offset, _)| (start..end).contains(offset))
        {
            let _ = write!(text, "  ; {target}");
        }
        text.push('\n');
    }
}
