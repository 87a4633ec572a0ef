//! Edit (in progress).
