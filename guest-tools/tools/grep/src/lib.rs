//! Grep (in progress).
