fn main() {
    println!("wgllm: CLI coming in this commit series");
}
