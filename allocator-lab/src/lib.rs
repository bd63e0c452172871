//! `allocator-lab`: the policy lab. The packing experiment of Weng et al., "Beware of
//! Fragmentation" (USENIX ATC '23), run through the master core with placement modules
//! ([`experiment`], its CSVs and plots), and the importer of the Alibaba GPU trace v2023 into a
//! scenario ([`import`]).
//!
//! It builds on the simulation library (`allocator-sim`), `placement-core` (the fragmentation
//! measure and node view) and `allocator-pictures`. What it must never know: HTTP, tokio,
//! Mesos's JSON, the command line (its flags and progress bar are the binary's).
#![deny(missing_docs)]

pub mod experiment;
pub mod import;
