//! XNNPACK delegates (being ported).
use ptec_frontend::ValueIndex;
use crate::error::ImportError;
use crate::program::Importer;
pub(crate) fn import(importer: &mut Importer<'_, '_>, _graph: &ptec_frontend::DelegateGraph<'_, ptec_frontend::delegate::Xnnpack>, _args: &[ValueIndex]) -> Result<(), ImportError> {
    Err(importer.contradiction("XNNPACK import is being ported"))
}
