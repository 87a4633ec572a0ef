//! Write (in progress).
