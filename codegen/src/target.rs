//! The machines ptec generates code for: the host (with every
//! instruction-set extension its CPU reports) or a target-lexicon triple
//! (with that architecture's baseline), and the settings every target
//! shares.

use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use target_lexicon::Triple;

use crate::error::CodegenError;

/// How generated code refers to itself and to other symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CodeModel {
    /// Absolute addresses: code that runs where it was generated (the JIT).
    Static,
    /// Position-independent code, for shared objects and relocatable objects.
    PositionIndependent,
}

/// Settings shared by every target: optimize for speed; run Cranelift's IR
/// verifier in debug builds.
fn shared_flags(model: CodeModel) -> settings::Flags {
    let mut builder = settings::builder();
    let set = |builder: &mut settings::Builder, name: &str, value: &str| {
        builder.set(name, value).expect("a known Cranelift setting");
    };
    set(&mut builder, "opt_level", "speed");
    set(
        &mut builder,
        "enable_verifier",
        if cfg!(debug_assertions) {
            "true"
        } else {
            "false"
        },
    );
    let pic = model == CodeModel::PositionIndependent;
    set(&mut builder, "is_pic", if pic { "true" } else { "false" });
    settings::Flags::new(builder)
}

/// This machine, with every extension its CPU has.
pub(crate) fn host_isa(model: CodeModel) -> Result<OwnedTargetIsa, CodegenError> {
    cranelift_native::builder()
        .map_err(|message| CodegenError::Isa(message.to_string()))?
        .finish(shared_flags(model))
        .map_err(|error| CodegenError::Isa(error.to_string()))
}

/// Another machine, with its architecture's baseline extensions.
pub(crate) fn triple_isa(
    triple: &Triple,
    model: CodeModel,
) -> Result<OwnedTargetIsa, CodegenError> {
    cranelift_codegen::isa::lookup(triple.clone())
        .map_err(|error| CodegenError::Isa(format!("{triple}: {error}")))?
        .finish(shared_flags(model))
        .map_err(|error| CodegenError::Isa(format!("{triple}: {error}")))
}
