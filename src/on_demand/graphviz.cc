// Graphviz's functions the project calls (pictures of a view), loaded on first use
// (env/shared_library.h). libgvc loads its layout and render plugins itself, which
// link libgvc and libcgraph by soname: opened here first, they are the ones reused.
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "on_demand/forward.h"

namespace {
constinit cincinnati::env::SharedLibrary libgvc("libgvc.so.6", "libgvc6");
constinit cincinnati::env::SharedLibrary libcgraph("libcgraph.so.6", "libcgraph6");
}  // namespace

CINCINNATI_FORWARD(libgvc, GVC_t*, gvContext, (void), ())
CINCINNATI_FORWARD(libgvc, int, gvLayout, (GVC_t * gvc, graph_t* graph, const char* engine), (gvc, graph, engine))
CINCINNATI_FORWARD(libgvc, int, gvRenderData, (GVC_t * gvc, graph_t* graph, const char* format, char** result, unsigned int* length),
                   (gvc, graph, format, result, length))
CINCINNATI_FORWARD(libgvc, void, gvFreeRenderData, (char* data), (data))
CINCINNATI_FORWARD(libgvc, int, gvFreeLayout, (GVC_t * gvc, graph_t* graph), (gvc, graph))
CINCINNATI_FORWARD(libcgraph, Agraph_t*, agmemread, (const char* text), (text))
CINCINNATI_FORWARD(libcgraph, int, agclose, (Agraph_t * graph), (graph))
CINCINNATI_FORWARD(libcgraph, char*, agget, (void* object, char* name), (object, name))
CINCINNATI_FORWARD(libcgraph, agerrlevel_t, agseterr, (agerrlevel_t level), (level))
CINCINNATI_FORWARD(libcgraph, char*, aglasterr, (void), ())
