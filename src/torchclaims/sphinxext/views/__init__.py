"""What renders records: the claims × backends grid and its matrix, the accelerator pages, the gallery
cards, the evidence blocks, a claim's workaround, version strips, the downloads, and the docutils and HTML builders
(:mod:`.markup`, :mod:`.safe_html`) they are written with."""
