"""The VRAM cost model: run configuration × architecture × GPU → memory interval."""
