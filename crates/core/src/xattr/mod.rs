//! Extended attributes: the inline area of the inode followed by the xattr node.

use crate::data::Mapper;
use crate::{Error, Result, Xattr};
use uf2fs_format::consts::NODE_FOOTER_OFFSET;
use uf2fs_format::xattr::{acl_to_xattr, parse_xattrs, INDEX_POSIX_ACL_ACCESS, INDEX_POSIX_ACL_DEFAULT};

impl Mapper<'_> {
    /// All user-visible extended attributes.
    pub fn xattrs(&self) -> Result<Vec<Xattr>> {
        let i = &self.inode.inode;
        let mut area = self.inode.block[i.inline_xattr_range()].to_vec();
        if i.xattr_nid != 0 {
            let node = self.nodes.read(self.dev, i.xattr_nid, self.inode.ino)?;
            area.extend_from_slice(&node[..NODE_FOOTER_OFFSET]);
        }
        let err = |e: uf2fs_format::FormatError| {
            Error::corrupt(format!("xattrs of inode {}", self.inode.ino), None, e.to_string())
        };
        let mut out = Vec::new();
        for x in parse_xattrs(&area).map_err(err)? {
            let Some(name) = x.full_name() else { continue };
            let value = if x.index == INDEX_POSIX_ACL_ACCESS || x.index == INDEX_POSIX_ACL_DEFAULT {
                acl_to_xattr(&x.value).map_err(err)?
            } else {
                x.value
            };
            out.push(Xattr { name, value });
        }
        Ok(out)
    }
}
