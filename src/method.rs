//! Choosing the method a command works on.

use ptec_frontend::{Method, Program};

/// The method named `name`, or the program's first method when no name is
/// given.
pub fn select_method<'p, 'a>(
    program: &'p Program<'a>,
    name: Option<&str>,
) -> anyhow::Result<&'p Method<'a>> {
    Ok(match name {
        Some(name) => program
            .method(name)
            .ok_or_else(|| ptec_compiler::Error::no_method(program, name))?,
        None => program
            .methods
            .first()
            .ok_or(ptec_compiler::Error::NoMethods)?,
    })
}
