import { principalOf } from '../guard.js';
import { defineRoute } from '../route.js';
import { UserBody, userBody } from '../schemas/bodies.js';

export function userRoutes() {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/users',
      summary: 'The authenticated user (Render: get-user)',
      tags: ['Users'],
      access: 'signed-in',
      schema: { response: { 200: UserBody } },
      handler: async (req) => {
        const p = principalOf(req);
        if (p.kind === 'operator')
          return { id: 'operator', email: '', name: 'Operator', createdAt: new Date(0).toISOString() };
        return userBody(p.user);
      },
    }),
  ];
}
