# The HTTP services and the web console: one image, one process each (`pnpm start:<service>`, see
# docker-compose.yml). They hold no model and run no ML, so there is no Python here; the worker image
# (Dockerfile.worker) has the core.
FROM node:20-bookworm-slim
WORKDIR /app
ENV CI=true
COPY . .
# pnpm at the version package.json pins (corepack reads packageManager); packages from the lockfile only.
RUN corepack enable && pnpm install --frozen-lockfile && pnpm --filter @ftp/console build
USER node
CMD ["pnpm", "start:preprocessing"]
