"""ship: the artifacts a distribution deploys (a patched wheel, an image recipe), and their offline check."""
