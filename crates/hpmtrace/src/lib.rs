//! hpmtrace: the trace performance library.
