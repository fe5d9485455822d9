//! Stand-alone sandbox helper, for tests and benchmarks. The `toolgate` binary dispatches to
//! the same [`toolgate_sandbox::helper_main`] when its first argument is
//! [`toolgate_sandbox::HELPER_ARG`].

fn main() -> std::process::ExitCode {
    toolgate_sandbox::helper_main()
}
