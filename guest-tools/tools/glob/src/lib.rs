//! Glob (in progress).
