"""ship: the artifacts a distribution deploys (a patched wheel, an image recipe), and their offline check."""

__all__ = [
    "containerfile",
    "image",
    "labels",
    "verify",
    "wheel",
    "wheelzip",
]  # the public modules; import what you need from them
