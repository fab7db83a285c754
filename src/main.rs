fn main() -> std::process::ExitCode {
    // Mesa's Vulkan loader complains on stderr when XDG_RUNTIME_DIR is unset (common in containers
    // and CI); it only needs a writable directory. Set before any thread starts.
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    wgllm::cli::main()
}
