pub mod audit;
pub mod sanitize;
pub mod secret_manager;
pub mod secure_buffer;

pub use audit::AuditLogger;
pub use sanitize::sanitize_connection_string;
pub use secret_manager::Secret;
pub use secret_manager::SecretManager;
pub use secure_buffer::SecureBuffer as SecuritySecureBuffer;
