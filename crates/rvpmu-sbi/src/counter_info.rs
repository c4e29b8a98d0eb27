//! The `counter_info` word that `sbi_pmu_counter_get_info` answers (spec,
//! "Function: Get details of a counter"): `[11:0]` the CSR number,
//! `[17:12]` the width minus one, `[XLEN-1]` the type (0 hardware, 1
//! firmware).

/// The `counter_info` word of `sbi_pmu_counter_get_info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterInfo {
    /// A hardware counter read through `csr`, `width` bits wide (1..=64).
    Hardware {
        /// 12-bit CSR number.
        csr: u16,
        /// Number of implemented bits.
        width: u8,
    },
    /// A firmware counter (`csr`/`width` are ignored by callers).
    Firmware {
        /// Number of bits (64 here).
        width: u8,
    },
}

impl CounterInfo {
    const TYPE_BIT: u64 = 1 << 63;

    /// Encode: `[11:0]` CSR, `[17:12]` width - 1, `[XLEN-1]` type.
    pub fn encode(self) -> u64 {
        match self {
            CounterInfo::Hardware { csr, width } => {
                (csr as u64 & 0xFFF) | ((width as u64 - 1) & 0x3F) << 12
            }
            CounterInfo::Firmware { width } => Self::TYPE_BIT | ((width as u64 - 1) & 0x3F) << 12,
        }
    }

    /// Decode a `counter_info` word (supervisor side).
    pub fn decode(v: u64) -> CounterInfo {
        let width = ((v >> 12) & 0x3F) as u8 + 1;
        if v & Self::TYPE_BIT != 0 {
            CounterInfo::Firmware { width }
        } else {
            CounterInfo::Hardware {
                csr: (v & 0xFFF) as u16,
                width,
            }
        }
    }
}
