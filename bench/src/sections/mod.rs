//! The sections of the benchmark, one module each. A section is a `Section` constant; the list
//! in main.rs says which run and in what order (the order of the rows in the table).

pub mod attrs;
pub mod batch;
pub mod dequant;
pub mod host_cold;
pub mod list;
pub mod load;
pub mod memory;
pub mod range;
pub mod remote;
pub mod scaling;
pub mod seek;
pub mod shards;
pub mod v2;
pub mod verify;
pub mod views;
pub mod write;
pub mod zstd;

use crate::Res;
use crate::args::Args;
use crate::files::Files;
use crate::report::Row;
use crate::workloads::Workload;

/// What every section sees of the run.
pub struct Ctx<'a> {
    pub args: &'a Args,
    /// CPUs available to this process.
    pub cores: usize,
}

/// A section measuring generated workloads: called once per workload it lists.
pub type OnWorkload = fn(&Ctx, &Workload, &Files, &mut Vec<Row>) -> Res<()>;
/// A section with data of its own.
pub type Standalone = fn(&Ctx, &mut Vec<Row>) -> Res<()>;

pub enum Runs {
    /// On these workloads (ids from `workloads::ALL`), once each, after the workload has been
    /// generated and its files made and warmed. Workloads are taken in the order of
    /// `workloads::ALL`, and on each the sections in the order of main's list.
    On(&'static [&'static str], OnWorkload),
    /// Once, after every workload section, in the order of main's list.
    Alone(Standalone),
}

pub struct Section {
    /// Its name for `--only`.
    pub name: &'static str,
    pub runs: Runs,
}

impl Section {
    /// The function to call for workload `id`, if this section measures it.
    pub fn on(&self, id: &str) -> Option<OnWorkload> {
        match self.runs {
            Runs::On(ids, f) if ids.contains(&id) => Some(f),
            _ => None,
        }
    }
    pub fn alone(&self) -> Option<Standalone> {
        match self.runs {
            Runs::Alone(f) => Some(f),
            Runs::On(..) => None,
        }
    }
}
