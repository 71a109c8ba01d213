// topk's codec with its C ABI glue (plugins/topk/topk_codec.cc), compiled
// into the GPU test so that the test drives host and device instances
// through the descriptor, the engine's way, without loading the module (a
// second copy of the CUDA runtime).  The module is built from the same file.
#include "../../plugins/topk/topk_codec.cc"
