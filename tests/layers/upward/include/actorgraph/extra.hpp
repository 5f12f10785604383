// A public header that no layer implements.
#pragma once
