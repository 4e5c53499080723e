#include "optimizer/graph_pass.h"
