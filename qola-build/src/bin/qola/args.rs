//! The command line's arguments: QoLA's commands and option names (`build`, `checkout`,
//! `--manifest`, `--aiter-root`, `--aiter-commit`, `--patches-dir`, `--output-dir`, `--arch`,
//! `--mode`, `--group`, `--skip-checkout`, `-v`) with qola's own beside them, each alias listed
//! in `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use qola_build::aiter::prebuilt::StoreOptions;
use qola_build::manifest::BuildMode;
use qola_build::{OutputBuild, Prepare};

/// qola: prepare AMD's AITER sources (a pinned commit plus a patch series) and build its
/// kernels, correctly and incrementally; a drop-in for QoLA's `build` and `checkout`.
///
/// Exit status: 0 success, 1 error (build: any module failed), 2 usage error, 3 refused
/// (local edits). Reports go to standard output; with --json it is exactly one JSON object.
/// Progress, information and warnings go to standard error.
#[derive(Debug, Parser)]
#[command(name = "qola", version, max_term_width = 100)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Make the checkout the prepared state (clone, resync, or nothing when up to date).
    Prepare(PrepareCmd),
    /// QoLA's name for prepare (never a blind reset: local edits are refused).
    Checkout(CheckoutCmd),
    /// Say what prepare would do and why; writes nothing, takes no lock, never fetches.
    Status(PrepareCmd),
    /// Print local edits relative to the prepared state as a patch for the series.
    Diff(DiffCmd),
    /// Prepare, then build the manifest's [[modules]] into --output-dir as QoLA lays it out
    /// (lib/<ns>_<md_name>.so, include/, configs/, manifest.json); incremental.
    Build(BuildCmd),
    /// Every decision and command `build` would run, without compiling (code generation runs).
    Plan(BuildCmd),
    /// What qola's object cache holds (size, objects, the last builds' hits and misses).
    Cache(CacheCmd),
    /// Keys that sign prebuilt archives (minisign's format): make a pair, show a public key.
    Key(KeyCmd),
    /// Make a TransformerEngine checkout build with the installed qola: QoLA's submodule
    /// dropped (refused when it holds local edits), its patch series kept, and a forwarding
    /// 3rdparty/QoLA/cmake/QoLA.cmake that includes the installed qola's.
    SwitchTe(SwitchTeCmd),
}

/// `switch-te`.
#[derive(Debug, Args)]
pub(crate) struct SwitchTeCmd {
    /// The TransformerEngine checkout [default: the current directory].
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `key`.
#[derive(Debug, Args)]
pub(crate) struct KeyCmd {
    #[command(subcommand)]
    pub action: KeyAction,
}

/// What `key` does.
#[derive(Debug, Subcommand)]
pub(crate) enum KeyAction {
    /// Make a key pair: the secret key (owner-only; for `build --sign-key`, kept in CI's secret
    /// store) and the public key (for `build --trust`); never over an existing file.
    Generate {
        /// The secret key's file.
        #[arg(long, value_name = "FILE", default_value = "qola-sign.key")]
        secret: PathBuf,
        /// The public key's file.
        #[arg(long, value_name = "FILE", default_value = "qola-sign.pub")]
        public: PathBuf,
    },
    /// Print the public key (`RW...`, what `--trust` takes) and its id, of a secret or a public
    /// key file.
    Show {
        /// The key file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

/// Where the AITER tree comes from and where it goes.
#[derive(Debug, Args)]
pub(crate) struct Source {
    /// The manifest [default: QOLA_MANIFEST, else ./qola.toml if present].
    #[arg(short = 'm', long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// The AITER checkout [default: QOLA_AITER_ROOT, else qola's cache].
    #[arg(
        short = 'a',
        long = "aiter-root",
        visible_alias = "root",
        value_name = "DIR"
    )]
    pub root: Option<PathBuf>,
    /// The AITER commit: SHA, tag or branch [default: QOLA_AITER_COMMIT, the manifest's].
    #[arg(long = "aiter-commit", visible_alias = "commit", value_name = "REV")]
    pub commit: Option<String>,
    /// The patch series directory [default: QOLA_PATCHES_DIR, the manifest's, else qola's
    /// own series].
    #[arg(long = "patches-dir", visible_alias = "patches", value_name = "DIR")]
    pub patches: Option<PathBuf>,
    /// The AITER repository [default: QOLA_AITER_URL, the manifest's, github.com/ROCm/aiter].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Never use the network (QOLA_OFFLINE=1).
    #[arg(long)]
    pub offline: bool,
}

/// How to treat a tree that is not the prepared state.
#[derive(Debug, Args)]
pub(crate) struct Treatment {
    /// Save local edits as a backup patch, then prepare (QOLA_FORCE_PREPARE=1).
    #[arg(long)]
    pub force: bool,
    /// Use the tree as it is, write nothing (QOLA_SKIP_PREPARE=1).
    #[arg(long)]
    pub skip: bool,
}

/// `prepare` and `status`.
#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub(crate) struct PrepareCmd {
    #[command(flatten)]
    pub source: Source,
    #[command(flatten)]
    pub treatment: Treatment,
    /// Print one JSON object on standard output.
    #[arg(long)]
    pub json: bool,
}

/// `checkout`.
#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub(crate) struct CheckoutCmd {
    #[command(flatten)]
    pub prepare: PrepareCmd,
    /// A module group of the manifest, repeatable (QoLA's checkout --group): checked to exist;
    /// the tree is the same for every group.
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
}

/// `diff`.
#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub(crate) struct DiffCmd {
    #[command(flatten)]
    pub source: Source,
    /// Write the patch to this file [default: standard output].
    #[arg(
        short = 'o',
        long = "output-dir",
        visible_alias = "output",
        value_name = "FILE"
    )]
    pub output: Option<PathBuf>,
}

/// QoLA's build modes.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Mode {
    /// A shared library with a C++ API and no PyTorch: what qola builds.
    #[value(name = "cpp_itfs")]
    CppItfs,
    /// A Python extension linked against PyTorch: refused.
    Pybind,
}

/// `build` and `plan`.
#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub(crate) struct BuildCmd {
    #[command(flatten)]
    pub prepare: PrepareCmd,
    /// The output directory.
    #[arg(
        short = 'o',
        long = "output-dir",
        visible_alias = "output",
        value_name = "DIR"
    )]
    pub output: PathBuf,
    /// GPU architecture, repeatable, `;`- or `,`-separated [default: the manifest's [build]
    /// architectures, then GPU_ARCHS, then this machine's].
    #[arg(long = "arch", value_name = "ARCH")]
    pub archs: Vec<String>,
    /// The build mode of modules whose entry has none (pybind needs PyTorch: refused).
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Only modules of this group, repeatable [default: QOLA_BUILD_GROUPS, else all].
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
    /// Use the tree as it is (QOLA_AITER_SOURCE_DIR names such a tree too).
    #[arg(long)]
    pub skip_checkout: bool,
    /// Only CK instances whose name matches (CK's --filter).
    #[arg(long, value_name = "GLOB")]
    pub filter: Option<String>,
    /// Print each compile command (build) or each unit's decision (plan).
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Write the timings report of each library that compiles: an HTML page and a Chrome trace
    /// next to its log, their path said at the end [default: QOLA_TIMINGS=1; build only].
    #[arg(long)]
    pub timings: bool,
    /// Make the manifest's [qola] rocm_versions a requirement: another HIP version is an error
    /// [default: a warning, as in QoLA].
    #[arg(long)]
    pub require_rocm: bool,
    /// A registry in QoLA's format (qola/cpp_itfs/registry.toml) adding modules to qola's and
    /// replacing its entries [default: QOLA_REGISTRY, the manifest's [qola] registry].
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// Fetch each module's files by its library key before preparing (file:///dir or
    /// http(s)://...); a module that hits needs no checkout and no compile [default:
    /// QOLA_PREBUILT_URL, the manifest's [qola] prebuilt].
    #[arg(long, value_name = "URL")]
    pub prebuilt: Option<String>,
    /// Publish each module built here from a tree qola prepared, by its library key
    /// [default: QOLA_PUBLISH_URL].
    #[arg(long, value_name = "URL")]
    pub publish: Option<String>,
    /// With --prebuilt: build from source anyway and compare the files byte for byte.
    #[arg(long)]
    pub verify: bool,
    /// With --publish: sign each archive with this minisign secret key (owner-only; `qola key
    /// generate` makes one) [default: QOLA_SIGN_KEY].
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
    /// With --prebuilt: take only archives signed by this publisher (a minisign public key
    /// `RW...` or its .pub file; repeat for several) [default: QOLA_TRUSTED_KEYS, the
    /// manifest's [qola] trusted_keys].
    #[arg(long = "trust", value_name = "KEY")]
    pub trust: Vec<String>,
}

/// `cache`.
#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub(crate) struct CacheCmd {
    /// qola's cache [default: QOLA_CACHE_DIR, $XDG_CACHE_HOME/qola, $HOME/.cache/qola].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Remove every object no running build holds.
    #[arg(long)]
    pub clear: bool,
    /// Print one JSON object on standard output.
    #[arg(long)]
    pub json: bool,
}

impl PrepareCmd {
    /// The preparation these arguments ask for.
    pub(crate) fn options(&self) -> Prepare {
        let mut options = self.source.options();
        if self.treatment.force {
            options.force(true);
        }
        if self.treatment.skip {
            options.skip(true);
        }
        options
    }
}

impl Source {
    /// The preparation of this source, no Cargo directives.
    pub(crate) fn options(&self) -> Prepare {
        let mut options = Prepare::new();
        options.cargo_metadata(false);
        if let Some(path) = &self.manifest {
            options.manifest(path);
        }
        if let Some(root) = &self.root {
            options.root(root);
        }
        if let Some(commit) = &self.commit {
            options.commit(commit);
        }
        if let Some(dir) = &self.patches {
            options.patches_dir(dir);
        }
        if let Some(url) = &self.url {
            options.url(url);
        }
        if self.offline {
            options.offline(true);
        }
        options
    }
}

impl BuildCmd {
    /// The build these arguments ask for.
    pub(crate) fn output_build(&self) -> OutputBuild {
        let archs: Vec<String> = self
            .archs
            .iter()
            .flat_map(|a| qola_build::split_list(a))
            .collect();
        let mut build = OutputBuild::new(self.prepare.options(), &self.output);
        build
            .archs(&archs)
            .groups(&self.groups)
            .skip_checkout(self.skip_checkout)
            .verbose(self.verbose)
            .require_rocm(self.require_rocm);
        if self.timings {
            build.timings(true);
        }
        if let Some(mode) = self.mode {
            build.mode(match mode {
                Mode::CppItfs => BuildMode::CppItfs,
                Mode::Pybind => BuildMode::Pybind,
            });
        }
        if let Some(filter) = &self.filter {
            build.ck_filter(filter);
        }
        if let Some(registry) = &self.registry {
            build.registry(registry);
        }
        let mut stores = StoreOptions::new();
        if let Some(url) = &self.prebuilt {
            stores.fetch(url);
        }
        if let Some(url) = &self.publish {
            stores.publish(url);
        }
        stores.verify(self.verify);
        if let Some(key) = &self.sign_key {
            stores.sign_key(key);
        }
        stores.trust(&self.trust);
        build.prebuilt_stores(stores);
        build
    }
}
