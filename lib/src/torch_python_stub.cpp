// Empty on purpose: torchvision's operator library lists libtorch_python.so
// as needed but uses none of its symbols, and the real one cannot load
// without a Python interpreter. Built with that soname and loaded first by
// torchbench/vision_ops.h.
