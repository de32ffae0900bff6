//! Vulkan delegates (being ported).
use crate::error::ImportError;
use crate::program::Importer;
use ptec_frontend::ValueIndex;
pub(crate) fn import(
    importer: &mut Importer<'_, '_>,
    _graph: &ptec_frontend::DelegateGraph<'_, ptec_frontend::delegate::Vulkan>,
    _args: &[ValueIndex],
) -> Result<(), ImportError> {
    Err(importer.contradiction("Vulkan import is being ported"))
}
pub(crate) fn operators() -> Vec<crate::Operator> {
    Vec::new()
}
