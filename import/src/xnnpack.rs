//! XNNPACK delegates (being ported).
use crate::error::ImportError;
use crate::program::Importer;
use ptec_frontend::ValueIndex;
pub(crate) fn import(
    importer: &mut Importer<'_, '_>,
    _graph: &ptec_frontend::DelegateGraph<'_, ptec_frontend::delegate::Xnnpack>,
    _args: &[ValueIndex],
) -> Result<(), ImportError> {
    Err(importer.contradiction("XNNPACK import is being ported"))
}
pub(crate) fn node_types() -> Vec<crate::Operator> {
    Vec::new()
}
