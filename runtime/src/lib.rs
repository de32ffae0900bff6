//! ptec-runtime.
