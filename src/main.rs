fn main() -> std::process::ExitCode {
    wgllm::cli::main()
}
