// Forwarders: a function of a library opened on demand (env/shared_library.h), defined
// with the library's own declaration (the header's prototype and this definition must
// agree, or the build fails) and calling the real function, looked up once.
#pragma once

#include "env/shared_library.h"

// Defines `name(params)` returning `ret` as a call of the real `name(args)` in `library`.
#define CINCINNATI_FORWARD(library, ret, name, params, args)                                     \
  extern "C" ret name params {                                                                  \
    static const auto real = reinterpret_cast<decltype(&::name)>((library).Require(#name));    \
    return real args;                                                                           \
  }
