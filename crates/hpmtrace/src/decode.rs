//! Trace decoder (placeholder; filled by the decoder side).
