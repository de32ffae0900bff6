//! Choosing the method a command works on.

use ptec_frontend::{Method, Program};

/// The method named `name`, or the program's first method when no name is
/// given.
pub fn select_method<'p, 'a>(
    program: &'p Program<'a>,
    name: Option<&str>,
) -> anyhow::Result<&'p Method<'a>> {
    match name {
        Some(name) => program.method(name).ok_or_else(|| {
            let names: Vec<&str> = program
                .methods
                .iter()
                .map(|method| method.name.as_str())
                .collect();
            anyhow::anyhow!(
                "the program has no method {name:?} (it has {})",
                names.join(", ")
            )
        }),
        None => program
            .methods
            .first()
            .ok_or_else(|| anyhow::anyhow!("the program has no methods")),
    }
}
