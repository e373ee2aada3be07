import { Type } from '@sinclair/typebox';
import { SECRET_FILE_LIMITS, type SecretFile } from '../../core/secret-files.js';
import { IdParam } from './common.js';

// Render's secret files. Names and sizes are checked in core (core/secret-files.ts), which names the field at fault;
// the schema bounds only what is read.
const Content = Type.String({ maxLength: SECRET_FILE_LIMITS.fileBytes });
const FileName = Type.String({ minLength: 1, maxLength: 1024 });

/** Render's secretFile. */
export const SecretFileBody = Type.Object({ name: Type.String(), content: Type.String() }, { title: 'secretFile' });
/** Render's secretFileInput, as an array: PUT …/secret-files replaces the whole set. */
export const SecretFileInputArray = Type.Array(Type.Object({ name: FileName, content: Content }), {
  maxItems: SECRET_FILE_LIMITS.files,
});
/** PUT …/secret-files/:secretFileName's body. */
export const SecretFileContentInput = Type.Object({ content: Content });
export const SecretFileList = Type.Array(Type.Object({ secretFile: SecretFileBody, cursor: Type.String() }));
export const ServiceFileParams = Type.Object({ serviceId: IdParam, secretFileName: FileName });
export const GroupFileParams = Type.Object({ envGroupId: IdParam, secretFileName: FileName });

/** Bodies of PUT routes: the files' content may be 1 MiB each, more than the API's default body limit. */
export const SECRET_FILE_BODY_LIMIT = { one: 3 * 1024 * 1024, all: 6 * 1024 * 1024 };

/** A file name's cursor (a list is by name). */
export const fileCursor = (name: string) => Buffer.from(name).toString('base64url');
export const afterCursor = (cursor: string | undefined) =>
  cursor ? Buffer.from(cursor, 'base64url').toString('utf8') : undefined;
export const withFileCursors = (files: SecretFile[]) =>
  files.map((secretFile) => ({ secretFile, cursor: fileCursor(secretFile.name) }));
