//! One module per subcommand: its clap arguments and what it does.

pub mod bench;
pub mod convert;
pub mod generate;
pub mod info;
pub mod inspect;
pub mod pack;
pub mod run;
pub mod train;
