#pragma once
#include "host_cuda.h"
