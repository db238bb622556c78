//! Prebuilt libraries by content key: a fresh machine gets a module's output files (its
//! library, the public headers, the tuning tables) from a store, with no checkout, no
//! generator and no compile, when a build of the same inputs published them.
//!
//! # The model
//!
//! A module's output files are decided by its inputs, and qola knows them all before any
//! checkout: the manifest, the series, the compiler, the generators' Python. The **library
//! key** is the blake3 of those inputs ([`KeyInputs`], canonical JSON), computed by one pure
//! function ([`LibraryKey::of`]) from values gathered without a checkout, so a build that
//! prepares the tree computes the same key as a machine that has none. Builds are
//! byte-identical for the same inputs (the HIP pipeline's objects and links are), so the files
//! of one key are the files of every build of it; `qola build --prebuilt URL --verify`
//! rebuilds from source and compares, byte for byte.
//!
//! | input | why it is in the key |
//! |---|---|
//! | [`FORMAT`], qola's version and [`RECIPE_VERSION`] | qola's recipe, flags, wrappers and link decide the files |
//! | the AITER commit (40 hex digits) | the sources; it fixes composable_kernel's gitlink too |
//! | the series: each patch's name and blake3 | the patched sources |
//! | the module's `[[modules]]` entry, every key (not `hip_clang_path`'s path) | sources, flags, receipt, variants of the module |
//! | the build mode, the namespace, the architectures | the API's namespace and file names; the code objects |
//! | `[[mha_*_variants]]`'s CK filters, `--filter` / `QOLA_CK_FILTER[_<MODULE>]` | which instances are generated |
//! | `CXXFLAGS` (and its variants), `CC_SHELL_ESCAPED_FLAGS`, `QOLA_AITER_KEEP_INLINE_ALL` | flags of every unit |
//! | `AITER_CONFIG_*`: the tuned table's content | a generator's input |
//! | the compiler's identity (its content and `--version`; the module's own clang) | the code |
//! | the generators' Python: its version, and `packaging`, `pandas`, `numpy`, `jinja2`'s | the generated sources |
//!
//! Not in the key: any path (the checkout's, the output directory's, the cache's, the
//! manifest's, the compiler's), the AITER URL (a mirror serves the same commit), the launcher,
//! the job count, the timings switch.
//!
//! A module has **no key** (nothing fetched, nothing published; `qola plan` says why) when the
//! tree is not one qola prepares from the manifest alone: `--skip-checkout`,
//! `QOLA_SKIP_PREPARE`, `QOLA_AITER_SOURCE_DIR`, `AITER_META_DIR`, `CK_DIR` or
//! `HIP_KITTENS_DIR` set, a commit that is not a full SHA, or a user's registry (its files are
//! not keyed). A tree with local edits is refused by the preparation itself (or, with
//! `--force`, saved and put back to the prepared state), so a build that publishes always built
//! the tree the key describes.
//!
//! # The store
//!
//! `<URL>/<md_name>/<key>.tar.zst` (see `archive` for its checks). A fetch happens before the
//! preparation; a module that hits is unpacked and its record kept in
//! `<out>/_qola/prebuilt/<md_name>.json`, so the next build with the same key and the files
//! unchanged fetches and writes nothing. A miss, a store that refuses or does not answer, or an
//! archive that fails a check is one warning, and the module is built from source as without
//! a store.

mod archive;
pub(crate) mod key;
mod remote;
mod signing;
mod store;
mod store_options;
mod stores;

pub(crate) use key::{KeyContext, interpreter_identity};

pub use key::{FORMAT, KeyInputs, LibraryKey, RECIPE_VERSION};
pub use signing::{default_key_files, generate_key, show_key};
pub use store_options::StoreOptions;
pub(crate) use stores::{Arrival, Stores};
