mod model;
mod spectral;
