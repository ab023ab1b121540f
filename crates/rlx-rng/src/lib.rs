//! # rlx-rng — bit-exact numpy and PyTorch random streams
//!
//! For porting seeded Python code: the same seed gives the same bits as
//!
//! * numpy's legacy [`RandomState`] (`np.random.seed` / `RandomState`:
//!   MT19937, polar normals with the cached second value, masked bounded
//!   integers),
//! * numpy's [`Generator`] (`np.random.default_rng`: [`SeedSequence`] +
//!   [`Pcg64`], ziggurat normals, Lemire bounded integers with numpy's
//!   buffered 32-bit draws, Floyd / tail-shuffle `choice`),
//! * torch's CPU generator [`TorchGenerator`] (`torch.manual_seed`: `rand`,
//!   `randn` with its 16-element switch, `randint`, `randperm`, `normal`,
//!   `bernoulli`, `exponential_`, `multinomial` with and without
//!   replacement, `normal` with tensor mean / std, dropout masks,
//!   `nn.Linear` initialisation).
//!
//! Every function is checked bit for bit against numpy / torch by the
//! fixtures of `tools/gen_rng_fixtures.py`. Floating-point results that go
//! through `ln` / `exp` / `sin` / `cos` use the platform libm, as numpy and
//! torch do; they match where the libm is the one numpy / torch call
//! (glibc on Linux).
//!
//! ```
//! use rlx_rng::{Generator, RandomState, TorchGenerator};
//!
//! // np.random.RandomState(42).random_sample(2)
//! assert_eq!(RandomState::new(42).random_sample(2), [0.3745401188473625, 0.9507143064099162]);
//! // np.random.default_rng(0).integers(0, 10, 3)
//! assert_eq!(Generator::new(0).integers(0, 10, 3)?, [8, 6, 5]);
//! // torch.manual_seed(0); torch.randperm(4)
//! assert_eq!(TorchGenerator::manual_seed(0).randperm(4), [0, 1, 3, 2]);
//! # Ok::<(), rlx_rng::RngError>(())
//! ```
//!
//! Invalid arguments (`low >= high`, a probability outside `[0, 1]`, an
//! empty population, ...) are [`RngError`]s; nothing here panics on input.
#![deny(missing_docs)]

mod bit_generator;
mod bounded;
mod choice;
mod distributions;
mod error;
mod generator;
mod mt19937;
mod pcg64;
mod random_state;
mod seed_sequence;
mod torch;
mod torch_mathfun;
mod torch_sampling;
mod ziggurat;
mod ziggurat_tables;

pub use bit_generator::BitGenerator;
pub use bounded::NumpyInt;
pub use error::{Result, RngError};
pub use generator::Generator;
pub use mt19937::Mt19937;
pub use pcg64::Pcg64;
pub use random_state::RandomState;
pub use seed_sequence::{int_to_words, SeedSequence};
pub use torch::{LinearInit, TorchCpuCapability, TorchGenerator};
pub use torch_sampling::TorchFloat;
