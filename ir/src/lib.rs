//! ptec-ir.
