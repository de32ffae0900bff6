//! Defining compiled functions in a module within a code budget. Each
//! function is compiled first, its size counted against the budget, and
//! only then handed to the module, which copies it into memory it maps (the
//! JIT) or into the object: code over the limit is refused before any
//! memory is taken for it. Functions also go into the listing here, when
//! one is kept.

use cranelift_codegen::Context;
use cranelift_codegen::control::ControlPlane;
use cranelift_module::{FuncId, Module, ModuleError, ModuleReloc};

use crate::error::CodegenError;
use crate::listing::Listing;

/// Defines the functions of one compilation (a JIT method, or every method
/// and the C ABI of an object) and counts their bytes.
pub(crate) struct Definer<'l> {
    /// The most bytes of code the functions may take together.
    limit: u64,
    /// The bytes of code defined so far.
    defined: u64,
    listing: Option<&'l mut Listing>,
}

impl<'l> Definer<'l> {
    pub(crate) fn new(limit: u64, listing: Option<&'l mut Listing>) -> Definer<'l> {
        Definer {
            limit,
            defined: 0,
            listing,
        }
    }

    /// Compiles `context` and defines it as function `id`, named `name`.
    pub(crate) fn function(
        &mut self,
        module: &mut dyn Module,
        id: FuncId,
        name: &str,
        context: &mut Context,
    ) -> Result<(), CodegenError> {
        context.set_disasm(self.listing.is_some());
        context
            .compile(module.isa(), &mut ControlPlane::default())
            .map_err(ModuleError::from)?;
        let compiled = context
            .compiled_code()
            .expect("a context that compiled holds its code");
        self.charge(name, compiled.code_buffer().len())?;
        let relocs: Vec<ModuleReloc> = compiled
            .buffer
            .relocs()
            .iter()
            .map(|reloc| ModuleReloc::from_mach_reloc(reloc, &context.func, id))
            .collect();
        let alignment = u64::from(compiled.buffer.alignment);
        module.define_function_bytes(id, alignment, compiled.code_buffer(), &relocs)?;
        if let Some(listing) = self.listing.as_deref_mut() {
            listing.push_compiled(module, name, context);
        }
        Ok(())
    }

    /// Defines machine code assembled by ptec itself (no relocations) as
    /// function `id`, named `name`.
    pub(crate) fn bytes(
        &mut self,
        module: &mut dyn Module,
        id: FuncId,
        name: &str,
        alignment: u64,
        code: Vec<u8>,
    ) -> Result<(), CodegenError> {
        self.charge(name, code.len())?;
        module.define_function_bytes(id, alignment, &code, &[])?;
        if let Some(listing) = self.listing.as_deref_mut() {
            listing.push_bytes(name, code);
        }
        Ok(())
    }

    /// Counts `bytes` more of code, for function `name`.
    fn charge(&mut self, name: &str, bytes: usize) -> Result<(), CodegenError> {
        let needed = self.defined.saturating_add(bytes as u64);
        if needed > self.limit {
            return Err(CodegenError::CodeLimit {
                function: name.to_string(),
                needed,
                limit: self.limit,
            });
        }
        self.defined = needed;
        Ok(())
    }
}
