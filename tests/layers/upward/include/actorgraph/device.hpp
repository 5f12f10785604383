// A public header of the graph layer.
#pragma once
