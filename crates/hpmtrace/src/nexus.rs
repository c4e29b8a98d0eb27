//! Nexus message framing (placeholder; filled by the decoder side).
