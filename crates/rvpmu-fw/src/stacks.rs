// The firmware's per-hart stacks, in one place for the build script
// (which sizes the linker script's `.stacks` section: `include!`d there)
// and the firmware (`layout`, which re-exports them).

/// Harts the firmware serves. Harts with a larger `mhartid` park forever.
pub const MAX_HARTS: usize = 8;

/// Bytes of M-mode stack per hart (the trap frame sits at its top).
pub const STACK_SIZE: usize = 0x4000;
