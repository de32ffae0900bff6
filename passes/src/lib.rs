//! ptec-passes.
