//! ptec-codegen.
