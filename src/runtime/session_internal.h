// Internal session helpers shared by the runtime and tools.
#pragma once
#include "graph/graph.h"
#include "inferloop/session.h"
