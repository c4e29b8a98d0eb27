// The per-hart stacks, in one place for the build script (which sizes the
// linker script's `.stacks` section: `include!`d there) and the firmware.

/// Harts the firmware serves; harts with a larger `mhartid` park.
pub const MAX_HARTS: usize = 8;

/// Bytes of M-mode stack per hart (the event map is loaded in place, not
/// on a stack).
pub const STACK_SIZE: usize = 0x4000;
