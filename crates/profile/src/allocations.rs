//! The allocation part of a profile file (`profile --alloc`): an allocation profile's
//! samples are the calls of the malloc family by call site (a sample's count is calls,
//! its period bytes requested), and this says what was probed, the totals per
//! allocator function, what was freed, and the stacks of the blocks still live when
//! the program exited (leaks), over the profile's `frames`.

use serde::{Deserialize, Serialize};

/// What `profile --alloc` recorded beside the samples.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AllocSummary {
    /// A sample every `every` calls of each function (1: every call, exact).
    pub every: u64,
    /// Per probed function, in the order probed.
    pub functions: Vec<AllocFunction>,
    /// Blocks recorded here that were released: by `free` (and custom free functions),
    /// and by realloc when it moved a block or was asked for 0 bytes.
    pub frees: u64,
    /// Bytes of the released blocks, as their allocations requested (blocks realloc
    /// moved or freed included).
    pub freed_bytes: u64,
    /// Frees of addresses no recorded allocation returned (allocated before the
    /// recording, by a function not probed, or by posix_memalign, whose address is not
    /// returned).
    pub unmatched_frees: u64,
    /// Whether blocks were followed from allocation to free (needs every call and the
    /// return probes); when false `live` is empty and says nothing.
    pub tracked: bool,
    /// Blocks still allocated at exit, per call stack (frames index the profile's
    /// `frames`): `count` blocks, `period` bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live: Vec<LiveStack>,
    /// Things the reader must know (lost records, nested calls skipped, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Allocations sampled by bytes (a Poisson process with this mean gap; None: every
    /// allocation recorded): the samples' calls and bytes are then unbiased estimates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_bytes: Option<u64>,
    /// With `sample_bytes`: per sample row (index into the profile's `samples`), the
    /// standard deviation of its estimated bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub site_bytes_sd: Vec<(u32, f64)>,
}

/// Blocks still allocated at exit that share one call stack in one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveStack {
    /// The process that allocated the blocks.
    pub pid: u32,
    /// The thread that allocated them.
    pub tid: u32,
    /// Indices into the profile's `frames`, call site first.
    pub frames: Vec<u32>,
    /// Blocks.
    pub count: u64,
    /// Bytes.
    pub period: u64,
}

/// One probed function's totals.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AllocFunction {
    /// The function's name (`malloc`, or the custom allocator's).
    pub name: String,
    /// The object's path, as probed.
    pub object: String,
    /// What the function does with its arguments.
    pub role: Role,
    /// Calls from the program (calls the allocator made of itself are not counted).
    pub calls: u64,
    /// Bytes requested by those calls (0 for frees).
    pub bytes: u64,
    /// Calls made from inside another probed function (realloc(NULL, n) calling malloc):
    /// left out of `calls` and `bytes`, so no byte is counted twice.
    #[serde(default)]
    pub nested: u64,
}

impl AllocSummary {
    /// Blocks still allocated at exit (0 when blocks were not followed).
    pub fn live_blocks(&self) -> u64 {
        self.live.iter().map(|s| s.count).sum()
    }

    /// Bytes of the blocks still allocated at exit.
    pub fn live_bytes(&self) -> u64 {
        self.live.iter().map(|s| s.period).sum()
    }

    /// Calls of the allocating functions (frees excluded).
    pub fn allocations(&self) -> u64 {
        self.functions.iter().filter(|f| f.role.allocates()).map(|f| f.calls).sum()
    }

    /// Bytes requested by every probed function (frees request none).
    pub fn allocated_bytes(&self) -> u64 {
        self.functions.iter().map(|f| f.bytes).sum()
    }
}

/// What a probed function is, for reading its arguments (argument numbers from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Role {
    /// Returns a block of its first argument's bytes (calloc, with its count, is `Calloc`).
    #[default]
    Alloc,
    /// calloc(count, size).
    Calloc,
    /// memalign/aligned_alloc(alignment, size).
    Aligned,
    /// realloc(pointer, size).
    Realloc,
    /// posix_memalign(&pointer, alignment, size): the address is written to memory, not
    /// returned, so its blocks are counted but not followed.
    PosixMemalign,
    /// Releases the block at its first argument.
    Free,
    /// A custom allocator: size in argument `size_arg`.
    Custom {
        /// The argument holding the size, from 0.
        size_arg: u8,
    },
    /// A custom release function: the block in argument `pointer_arg`.
    CustomFree {
        /// The argument holding the block's address, from 0.
        pointer_arg: u8,
    },
}

impl Role {
    /// Whether its calls allocate (every role but the release functions).
    pub fn allocates(self) -> bool {
        !matches!(self, Role::Free | Role::CustomFree { .. })
    }

    /// Whether the block's address is the return value (what a return probe reads).
    pub fn returns_block(self) -> bool {
        matches!(self, Role::Alloc | Role::Calloc | Role::Aligned | Role::Realloc | Role::Custom { .. })
    }

    /// Bytes requested, from the first arguments.
    pub fn bytes(self, args: &[u64; 4]) -> u64 {
        match self {
            Role::Alloc => args[0],
            Role::Calloc => args[0].saturating_mul(args[1]),
            Role::Aligned | Role::Realloc => args[1],
            Role::PosixMemalign => args[2],
            Role::Custom { size_arg } => args[size_arg as usize % 4],
            Role::Free | Role::CustomFree { .. } => 0,
        }
    }

    /// The block a call releases (realloc's old block, a free's argument).
    pub fn released(self, args: &[u64; 4]) -> Option<u64> {
        match self {
            Role::Realloc | Role::Free => Some(args[0]),
            Role::CustomFree { pointer_arg } => Some(args[pointer_arg as usize % 4]),
            _ => None,
        }
        .filter(|p| *p != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_read_sizes_and_blocks_from_their_arguments() {
        let args = [0x1000, 24, 3, 0];
        assert_eq!(Role::Alloc.bytes(&args), 0x1000);
        assert_eq!(Role::Calloc.bytes(&args), 0x1000 * 24);
        assert_eq!((Role::Realloc.bytes(&args), Role::Realloc.released(&args)), (24, Some(0x1000)));
        assert_eq!(Role::PosixMemalign.bytes(&args), 3);
        assert_eq!(Role::Custom { size_arg: 2 }.bytes(&args), 3);
        assert_eq!(Role::CustomFree { pointer_arg: 1 }.released(&args), Some(24));
        assert_eq!(Role::Free.released(&[0, 0, 0, 0]), None, "free(NULL) releases nothing");
        assert!(!Role::PosixMemalign.returns_block() && Role::Realloc.returns_block());
    }
}
